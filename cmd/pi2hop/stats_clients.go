package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/lan"
)

// clientView is one device of a share's LAN as stats prints it: its
// lease and the bytes forwarded from it (up, as sent) and to it (down, as
// delivered through the bottleneck), IPv4 and IPv6 together, since the
// share started.
type clientView struct {
	MAC       string    `json:"mac"`
	Addr      string    `json:"addr"`
	Addrs6    []string  `json:"addrs6,omitempty"`
	Hostname  string    `json:"hostname,omitempty"`
	Expiry    time.Time `json:"expiry,omitzero"`
	UpBytes   uint64    `json:"up_bytes"`
	DownBytes uint64    `json:"down_bytes"`
	lease     string
}

func clientViews(cs []lan.Client, now time.Time) []clientView {
	var vs []clientView
	for _, c := range cs {
		v := clientView{MAC: c.MAC, Addr: c.Addr.String(), Hostname: c.Hostname, Expiry: c.Expiry, UpBytes: c.Up, DownBytes: c.Down}
		for _, a := range c.Addrs6 {
			v.Addrs6 = append(v.Addrs6, a.String())
		}
		switch {
		case c.Expiry.IsZero():
			v.lease = "-"
		case c.Expiry.After(now):
			v.lease = c.Expiry.Sub(now).Round(time.Second).String() + " left"
		default:
			v.lease = "expired"
		}
		vs = append(vs, v)
	}
	return vs
}

// writeClients prints the LAN's devices, one a line.
func writeClients(w io.Writer, vs []clientView) {
	if len(vs) == 0 {
		return
	}
	fmt.Fprintf(w, "clients\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  mac\taddress\thost\tlease\tup\tdown\tipv6")
	for _, v := range vs {
		host, mac := v.Hostname, v.MAC
		if host == "" {
			host = "-"
		}
		if mac == "" {
			mac = "-"
		}
		v6 := strings.Join(v.Addrs6, ",")
		if v6 == "" {
			v6 = "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", mac, v.Addr, host, v.lease, instance.FormatBytes(v.UpBytes), instance.FormatBytes(v.DownBytes), v6)
	}
	tw.Flush()
}
