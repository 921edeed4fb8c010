package instance

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/connlimit"
	"github.com/pi2hop/pi2hop/lan"
	"github.com/pi2hop/pi2hop/shaper"
)

// StatsJSON is one snapshot as stats --json prints it (docs/json.md);
// conns is nil from an instance that does not count its connections.
func StatsJSON(cur *hop.Snapshot, rows [2]hop.StatsRow, fl *hop.WakeProbeRow, clients []lan.Client, conns *ConnStats) ([]byte, error) {
	// The queue's knobs, spelled as their flags (hop spells none).
	rows[0].Config.Knobs, rows[1].Config.Knobs = QueueKnobs(cur.Up.Spec), QueueKnobs(cur.Down.Spec)
	return json.Marshal(struct {
		Name    string            `json:"name"`
		Time    time.Time         `json:"time"`
		Dirs    [2]hop.StatsRow   `json:"directions"`
		Probe   *hop.WakeProbeRow `json:"floor,omitempty"` // the wake-up probe: the machine's own timing
		Clients []ClientView      `json:"clients,omitempty"`
		Conns   *ConnStats        `json:"conns,omitempty"`
	}{cur.Name, cur.Up.Taken, rows, fl, ClientViews(clients, cur.Up.Taken), conns})
}

// WriteConns says which of the instance's servers refused connections at
// their cap or failed to accept (out of fds); nothing when none did.
func WriteConns(w io.Writer, c *ConnStats) {
	if c == nil {
		return
	}
	var parts []string
	for _, s := range []struct {
		name string
		v    *connlimit.Stats
	}{{"control", &c.Control}, {"web", &c.Web}, {"metrics", &c.Metrics}} {
		if s.v.Refused > 0 || s.v.AcceptErrors > 0 {
			parts = append(parts, fmt.Sprintf("%s refused %d, failed accepts %d", s.name, s.v.Refused, s.v.AcceptErrors))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "connections: %s\n", strings.Join(parts, "; "))
	}
}

func WriteDirRow(w io.Writer, v *hop.StatsRow) {
	path := "client -> server"
	if v.Dir == "down" {
		path = "server -> client"
	}
	fmt.Fprintf(w, "%s (%s):\n", v.Dir, path)
	fmt.Fprintf(w, " %s\n", v.Config.TC)
	if v.Config.AlphaHz != 0 {
		fmt.Fprintf(w, "  (alpha, beta: tc's rounded read-back of the kernel's internal scaling of the %g and %g Hz set)\n", v.Config.AlphaHz, v.Config.BetaHz)
	}
	fmt.Fprintf(w, " link %s\n", v.Config.Link)
	fmt.Fprintf(w, " Sent %d bytes %d pkt (dropped %d, overlimits %d requeues 0)\n", v.SentBytes, v.SentPkts, v.Dropped, v.Overlimits)
	fmt.Fprintf(w, " backlog %db %dp requeues 0\n", v.BacklogB, v.BacklogP)
	for _, l := range v.QdiscLines() {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintf(w, " link: %s out over %.1fs, utilisation %.1f%%, queue not empty %.1f%%\n",
		shaper.FormatRate(uint64(v.OutBps)), v.Interval, 100*v.Utilisation, 100*v.QueueBusy)
	if v.NotBottleneck != "" {
		fmt.Fprintf(w, "  warning: %s\n", v.NotBottleneck)
	}
	fmt.Fprintf(w, "  in %d pkt %d bytes, out %d pkt %d bytes, pending %d, marked %d, malformed %d\n",
		v.InPkts, v.InBytes, v.OutPkts, v.OutBytes, v.Pending, v.Marked, v.Malformed)
	var drops []string
	for _, r := range hop.DropReasons(v.Qdisc) {
		drops = append(drops, fmt.Sprintf("%s %d", r, v.Drops[r]))
	}
	fmt.Fprintf(w, "  drops: %s; TUN ring drops %d\n", strings.Join(drops, ", "), v.RingDrops)
	if line := FaultLine(v); line != "" {
		fmt.Fprintf(w, "  %s\n", line)
	}
	cpu := "-" // no packet read: no figure per packet
	if v.CPUPerPkt != nil {
		cpu = fmt.Sprintf("%.1fus", *v.CPUPerPkt)
	}
	c, l, late := v.SojournC, v.SojournL, v.Lateness
	fmt.Fprintf(w, "  sojourn C p50 %.2fms p99 %.2fms max %.2fms, L p50 %.2fms p99 %.2fms max %.2fms\n", c.P50, c.P99, c.Max, l.P50, l.P99, l.Max)
	fmt.Fprintf(w, "  pacing lateness p50 %.0fus p99 %.0fus worst %.0fus; cpu %s/pkt\n", late.P50, late.P99, late.Max, cpu)
}

// FaultLine says which ECN path fault is on and what it did, by kind; ""
// when no fault is set and none ever acted.
func FaultLine(v *hop.StatsRow) string {
	var counts []string
	for _, k := range shaper.FaultKinds()[1:] {
		if n := v.ECNFaults[k]; n > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", k, n))
		}
	}
	if v.Config.ECNFault == "" && len(counts) == 0 {
		return ""
	}
	spec := v.Config.ECNFault
	if spec == "" {
		spec = "none"
	}
	if len(counts) == 0 {
		counts = []string{"no packet yet"}
	}
	return fmt.Sprintf("ecn fault %s: rewrote or dropped %s", spec, strings.Join(counts, ", "))
}

// WriteWakeProbeRow prints the wake-up probes' line (nothing without a probe).
func WriteWakeProbeRow(w io.Writer, v *hop.WakeProbeRow) {
	if v == nil {
		return
	}
	class := "SCHED_FIFO"
	if !v.RealTime {
		class = "normal (no real-time privilege)"
	}
	fmt.Fprintf(w, "machine floor: %s probes on %d CPUs sleeping %.0fus woke at worst %.0fus late\n", class, v.CPUs, v.PeriodUs, v.WorstLate)
}

// ClientView is one device of a share's LAN as stats prints it: its
// lease and the bytes forwarded from it (up, as sent) and to it (down, as
// delivered through the bottleneck), IPv4 and IPv6 together, since the
// share started.
type ClientView struct {
	MAC       string    `json:"mac"`
	Addr      string    `json:"addr"`
	Addrs6    []string  `json:"addrs6,omitempty"`
	Hostname  string    `json:"hostname,omitempty"`
	Expiry    time.Time `json:"expiry,omitzero"`
	UpBytes   uint64    `json:"up_bytes"`
	DownBytes uint64    `json:"down_bytes"`
	lease     string
}

func ClientViews(cs []lan.Client, now time.Time) []ClientView {
	var vs []ClientView
	for _, c := range cs {
		v := ClientView{MAC: c.MAC, Addr: c.Addr.String(), Hostname: c.Hostname, Expiry: c.Expiry, UpBytes: c.Up, DownBytes: c.Down}
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

// WriteClients prints the LAN's devices, one a line.
func WriteClients(w io.Writer, vs []ClientView) {
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
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", mac, v.Addr, host, v.lease, FormatBytes(v.UpBytes), FormatBytes(v.DownBytes), v6)
	}
	tw.Flush()
}
