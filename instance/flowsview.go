package instance

import (
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"text/tabwriter"
	"time"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/lan"
)

// FlowView is one flow as stats --flows prints it: the hop's figures and,
// in a share, the LAN device at one of its ends.
type FlowView struct {
	hop.Flow
	Device string `json:"device,omitempty"` // hostname (MAC), or the MAC
}

// DirFlows is one direction's flow table as stats --flows prints it.
type DirFlows struct {
	hop.FlowTable
	Top []FlowView `json:"top"`
}

// FlowsViews adds to each flow the LAN device at one of its ends.
func FlowsViews(tables [2]hop.FlowTable, clients []lan.Client) [2]DirFlows {
	devices := deviceIndex(clients)
	var dirs [2]DirFlows
	for i := range tables {
		dirs[i] = DirFlows{FlowTable: tables[i], Top: []FlowView{}}
		for _, f := range tables[i].Flows {
			dirs[i].Top = append(dirs[i].Top, FlowView{Flow: f, Device: devices.of(f)})
		}
		dirs[i].Flows = nil // printed as Top, with the devices
	}
	return dirs
}

// FlowsJSON is one line of stats --flows --json (docs/json.md).
func FlowsJSON(snap *hop.Snapshot, dirs [2]DirFlows) ([]byte, error) {
	return json.Marshal(struct {
		Name string      `json:"name"`
		Time time.Time   `json:"time"`
		Dirs [2]DirFlows `json:"directions"`
	}{snap.Name, snap.Up.Taken, dirs})
}

// WriteFlows prints a direction's top flows, one a line.
func WriteFlows(w io.Writer, d *DirFlows, devices bool) {
	path := "client -> server"
	if d.Dir == "down" {
		path = "server -> client"
	}
	fmt.Fprintf(w, "%s (%s): %d flows", d.Dir, path, d.Active)
	if d.Evicted > 0 {
		fmt.Fprintf(w, ", %d evicted", d.Evicted)
	}
	if o := d.Other.In.Total(); o.Packets > 0 {
		fmt.Fprintf(w, ", %d packets in no flow (table full or not IP)", o.Packets)
	}
	fmt.Fprintln(w)
	if len(d.Top) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "  proto\tsource\tdestination\tclass\trate\tshare\tq\tsojourn p50/p99\trtt p50/p99 (client+server)\tin\tout\tmarks\tdrops\tverdict"
	if devices {
		head += "\tdevice"
	}
	fmt.Fprintln(tw, head)
	for _, f := range d.Top {
		var drops uint64
		for _, n := range f.Drops {
			drops += n
		}
		q := f.Queue
		if q == "" {
			q = "-"
		}
		line := fmt.Sprintf("  %s\t%s\t%s\t%s\t%s\t%.0f%%\t%s\t%.2f/%.2fms\t%s\t%s\t%s\t%d\t%d\t%s",
			f.Proto, f.Src, f.Dst, f.Class, formatBps(f.RateBps), 100*f.Share, q, f.SojournP50Ms, f.SojournP99Ms, f.RTT.Text(),
			FormatBytes(f.In.Total().Bytes), FormatBytes(f.Out.Total().Bytes), f.Marks, drops, f.Verdict)
		if devices {
			dev := f.Device
			if dev == "" {
				dev = "-"
			}
			line += "\t" + dev
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

// formatBps prints a measured rate in tc's units, to three figures or so.
func formatBps(bps uint64) string {
	switch {
	case bps >= 1e9:
		return fmt.Sprintf("%.2fgbit", float64(bps)/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%.1fmbit", float64(bps)/1e6)
	case bps >= 1e3:
		return fmt.Sprintf("%.0fkbit", float64(bps)/1e3)
	}
	return fmt.Sprintf("%dbit", bps)
}

// devices maps a LAN address to the device that holds it.
type devices map[netip.Addr]string

func deviceIndex(cs []lan.Client) devices {
	d := devices{}
	for _, c := range cs {
		name := c.MAC
		if c.Hostname != "" {
			name = c.Hostname + " (" + c.MAC + ")"
		}
		if c.Addr.IsValid() {
			d[c.Addr] = name
		}
		for _, a := range c.Addrs6 {
			d[a] = name
		}
	}
	return d
}

// of returns the device at either end of f ("" for none): the source of
// what it sends up, the destination of what it receives down.
func (d devices) of(f hop.Flow) string {
	for _, ep := range []string{f.Src, f.Dst} {
		if ap, err := netip.ParseAddrPort(ep); err == nil {
			if name, ok := d[ap.Addr().Unmap()]; ok {
				return name
			}
		}
	}
	return ""
}

// FormatBytes prints a byte count in kB/MB/GB (powers of 1000), as a
// tester reads a transfer.
func FormatBytes(n uint64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}
