package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"text/tabwriter"
	"time"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/lan"
)

// flowView is one flow as stats --flows prints it: the hop's figures and,
// in a share, the LAN device at one of its ends.
type flowView struct {
	hop.Flow
	Device string `json:"device,omitempty"` // hostname (MAC), or the MAC
}

// dirFlowsView is one direction's flow table as stats --flows prints it.
type dirFlowsView struct {
	hop.FlowTable
	Top []flowView `json:"top"`
}

func runStatsFlows(ctx context.Context, w io.Writer, a *statsArgs) error {
	for first := true; ; first = false {
		snap, tables, clients, err := instance.StatsFlows(a.name, a.top)
		if err != nil {
			return err
		}
		dirs := flowsViews(tables, clients)
		if a.json {
			b, err := statsFlowsJSON(snap, dirs)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "%s\n", b)
		} else {
			if !first {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "instance %s  %s\n", snap.Name, snap.Up.Taken.Format(time.TimeOnly))
			for i := range dirs {
				writeFlows(w, &dirs[i], len(clients) > 0)
			}
		}
		if a.every == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(a.every):
		}
	}
}

// flowsViews adds to each flow the LAN device at one of its ends.
func flowsViews(tables [2]hop.FlowTable, clients []lan.Client) [2]dirFlowsView {
	devices := deviceIndex(clients)
	var dirs [2]dirFlowsView
	for i := range tables {
		dirs[i] = dirFlowsView{FlowTable: tables[i], Top: []flowView{}}
		for _, f := range tables[i].Flows {
			dirs[i].Top = append(dirs[i].Top, flowView{Flow: f, Device: devices.of(f)})
		}
		dirs[i].Flows = nil // printed as Top, with the devices
	}
	return dirs
}

// statsFlowsJSON is one line of stats --flows --json (docs/json.md).
func statsFlowsJSON(snap *hop.Snapshot, dirs [2]dirFlowsView) ([]byte, error) {
	return json.Marshal(struct {
		Name string          `json:"name"`
		Time time.Time       `json:"time"`
		Dirs [2]dirFlowsView `json:"directions"`
	}{snap.Name, snap.Up.Taken, dirs})
}

// writeFlows prints a direction's top flows, one a line.
func writeFlows(w io.Writer, d *dirFlowsView, devices bool) {
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
	head := "  proto\tsource\tdestination\tclass\trate\tshare\tq\tsojourn p50/p99\tin\tout\tmarks\tdrops\tverdict"
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
		line := fmt.Sprintf("  %s\t%s\t%s\t%s\t%s\t%.0f%%\t%s\t%.2f/%.2fms\t%s\t%s\t%d\t%d\t%s",
			f.Proto, f.Src, f.Dst, f.Class, formatBps(f.RateBps), 100*f.Share, q, f.SojournP50Ms, f.SojournP99Ms,
			formatBytes(f.In.Total().Bytes), formatBytes(f.Out.Total().Bytes), f.Marks, drops, f.Verdict)
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
