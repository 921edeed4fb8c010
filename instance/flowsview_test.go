package instance

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/lan"
	"github.com/pi2hop/pi2hop/rtt"
)

// A flow's device is the LAN client at either of its ends, by IPv4 or
// IPv6 address; none for a flow between other hosts.
func TestFlowDevices(t *testing.T) {
	d := deviceIndex([]lan.Client{
		{Lease: lan.Lease{MAC: "aa:bb:cc:dd:ee:01", Addr: netip.MustParseAddr("192.168.77.10"), Hostname: "phone"},
			Addrs6: []netip.Addr{netip.MustParseAddr("fd00:77::10")}},
		{Lease: lan.Lease{MAC: "aa:bb:cc:dd:ee:02", Addr: netip.MustParseAddr("192.168.77.11")}},
	})
	for _, c := range []struct{ src, dst, want string }{
		{"192.168.77.10:5000", "1.1.1.1:443", "phone (aa:bb:cc:dd:ee:01)"},
		{"1.1.1.1:443", "192.168.77.11:5000", "aa:bb:cc:dd:ee:02"},
		{"[fd00:77::10]:5000", "[2001:db8::1]:443", "phone (aa:bb:cc:dd:ee:01)"},
		{"10.0.0.1:1", "10.0.0.2:2", ""},
	} {
		if got := d.of(hop.Flow{Src: c.src, Dst: c.dst}); got != c.want {
			t.Errorf("%s > %s: device %q, want %q", c.src, c.dst, got, c.want)
		}
	}
}

// The text view: a line per flow with its columns, the device column
// only when stats knows the LAN's clients.
func TestWriteFlows(t *testing.T) {
	f := hop.Flow{Proto: "udp", Src: "10.254.1.1:5000", Dst: "10.254.1.2:6000", Class: hop.ClassL4S, RateBps: 12_000_000,
		Share: 0.6, Queue: "L", SojournP50Ms: 0.5, SojournP99Ms: 1.25, Verdict: "well-behaved"}
	f.Marks = 7
	f.RTT = &hop.FlowRTT{Sum: rtt.Figures{N: 3, P50Ms: 20.44, P99Ms: 23.08}}
	f.Drops = map[string]uint64{"step": 1, "limit": 2}
	d := DirFlows{FlowTable: hop.FlowTable{Dir: "down", Active: 1}, Top: []FlowView{{Flow: f, Device: "phone"}}}
	for _, devices := range []bool{false, true} {
		var b bytes.Buffer
		WriteFlows(&b, &d, devices)
		out := b.String()
		for _, want := range []string{"down (server -> client): 1 flows\n", "udp", "10.254.1.1:5000", "L4S", "12.0mbit", "60%", "0.50/1.25ms", "20.4/23.1ms", "rtt p50/p99 (client+server)", "  7  ", "  3  ", "well-behaved"} {
			if !strings.Contains(out, want) {
				t.Errorf("devices %v: no %q in\n%s", devices, want, out)
			}
		}
		if strings.Contains(out, "phone") != devices {
			t.Errorf("devices %v: device column in\n%s", devices, out)
		}
	}
}

// The RTT cell: the sum when both halves are timed, else the half that
// is, named; why there is none for QUIC without the spin bit.
func TestRTTText(t *testing.T) {
	half := rtt.Figures{N: 5, P50Ms: 10.04, P99Ms: 12.56}
	for _, c := range []struct {
		rtt  *hop.FlowRTT
		want string
	}{
		{nil, "-"},
		{&hop.FlowRTT{Status: "waiting"}, "-"},
		{&hop.FlowRTT{Status: rtt.StatusNoSpin.String()}, "no spin"},
		{&hop.FlowRTT{ServerHalf: half}, "server 10.0/12.6ms"},
		{&hop.FlowRTT{ClientHalf: half}, "client 10.0/12.6ms"},
		{&hop.FlowRTT{ClientHalf: half, ServerHalf: half, Sum: rtt.Figures{N: 5, P50Ms: 20.08, P99Ms: 25.12}}, "20.1/25.1ms"},
	} {
		if got := c.rtt.Text(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.rtt, got, c.want)
		}
	}
}
