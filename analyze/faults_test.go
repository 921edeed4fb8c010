package analyze

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/pi2hop/pi2hop/pcap/pcaptest"
)

// fate is what the path does to one packet: the codepoint and DSCP it
// arrives with, those it leaves with, whether it is lost on the way,
// whether the hop's AQM marked it, and its transit (in to out).
type fate struct {
	in, out       aqm.ECN
	dscp, outDSCP uint8
	lost, marked  bool
	transit       int64
	// moved: a fault before the queue rewrote the codepoint, so the hop
	// queued the packet in the other class than its codepoint at in.
	moved bool
}

// faultFlows are the two flows of a fault case: A is selected by the
// fault (port 5000), B is not (port 6000); faultPkts packets each.
const faultPkts = 20

// clean is a valid path: every fifth ECN-capable packet marked CE by
// the AQM (a Not-ECT one would be dropped; none is here).
func clean(e aqm.ECN) func(int) fate {
	return func(i int) fate {
		f := fate{in: e, out: e, transit: 5e6}
		if i%5 == 4 && e != aqm.NotECT {
			f.out, f.marked = aqm.CE, true
		}
		return f
	}
}

// writeFaultCase writes the packets of both flows, interleaved at 1 ms,
// either as a pi2hop capture (taps up-in and up-out with the hop's
// annotations) or as two tcpdump-style captures (one interface each, no
// annotations) for --ingress / --egress.
func writeFaultCase(t *testing.T, dir string, pair, v6 bool, flows [2]func(int) fate) []Input {
	t.Helper()
	type rec struct {
		at   int64
		out  bool
		pkt  []byte
		ann  *pcap.Annotation
		flow int
	}
	var recs []rec
	for i := range faultPkts {
		for fl, fn := range flows {
			f := fn(i)
			if f.transit == 0 {
				f.transit = 5e6
			}
			tp := pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 17, SPort: 5000 + 1000*uint16(fl), DPort: 443,
				ID: uint32(i), Payload: 1000, Seq: uint32(i)}
			if v6 && fl == 0 {
				tp.Src, tp.Dst = pcaptest.Cli6, pcaptest.Srv6
			}
			pkt := setTOS(tp.Build(), f.dscp<<2|uint8(f.in))
			at := scenarioStart + int64(2*i+fl)*int64(time.Millisecond)
			cls := aqm.Classic
			if f.in == aqm.ECT1 || f.in == aqm.CE {
				cls = aqm.L4S
			}
			recs = append(recs, rec{at: at, pkt: pkt, ann: &pcap.Annotation{Class: cls, ECNIn: f.in}, flow: fl})
			if f.lost {
				continue
			}
			outCls := cls
			if f.moved {
				outCls = map[aqm.Class]aqm.Class{aqm.Classic: aqm.L4S, aqm.L4S: aqm.Classic}[cls]
			}
			ann := &pcap.Annotation{Class: outCls, ECNIn: f.in, HasDecision: true, Verdict: aqm.Verdict{Action: aqm.Pass, Class: outCls}}
			if f.marked {
				ann.Verdict.Action, ann.Verdict.Reason = aqm.Mark, aqm.ReasonStep
			}
			recs = append(recs, rec{at: at + f.transit, out: true, pkt: setTOS(pkt, f.outDSCP<<2|uint8(f.out)), ann: ann, flow: fl})
		}
	}
	slices.SortStableFunc(recs, func(x, y rec) int { return int(x.at - y.at) })

	write := func(path string, keep func(rec) (iface int, ok bool), setup func(c *pcap.Capture), ann bool) {
		c, err := pcap.NewCapture(path, pcap.Options{BufferRecords: 4096})
		if err != nil {
			t.Fatal(err)
		}
		setup(c)
		for _, r := range recs {
			iface, ok := keep(r)
			if !ok {
				continue
			}
			a := r.ann
			if !ann {
				a = nil
			}
			deadline := time.Now().Add(5 * time.Second)
			for !c.Offer(iface, r.at, r.pkt, a) {
				if time.Now().After(deadline) {
					t.Fatal("the capture writer took no record for 5s")
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if !pair {
		path := filepath.Join(dir, "hop.pcapng")
		var taps pcap.Taps
		write(path, func(r rec) (int, bool) {
			if r.out {
				return taps.Out, true
			}
			return taps.In, true
		}, func(c *pcap.Capture) { taps = c.AddTaps("up") }, true)
		return []Input{{Path: path}}
	}
	in, out := filepath.Join(dir, "in.pcapng"), filepath.Join(dir, "out.pcapng")
	var iface int
	setup := func(c *pcap.Capture) { iface = c.AddInterface("eth0") }
	write(in, func(r rec) (int, bool) { return iface, !r.out }, setup, false)
	write(out, func(r rec) (int, bool) { return iface, r.out }, setup, false)
	return []Input{{Path: in, Role: "in"}, {Path: out, Role: "out"}}
}

// setTOS returns a copy of the IP packet b with its ToS / Traffic Class
// byte set, the IPv4 header checksum fixed.
func setTOS(b []byte, tos uint8) []byte {
	out := append([]byte(nil), b...)
	if out[0]>>4 == 4 {
		out[1] = tos
		hl := int(out[0]&0xf) * 4
		binary.BigEndian.PutUint16(out[10:], pcaptest.IPv4Checksum(out[:hl]))
		return out
	}
	w := binary.BigEndian.Uint32(out)
	w = w&^(0xff<<20) | uint32(tos)<<20
	binary.BigEndian.PutUint32(out, w)
	return out
}

// TestFaultNamed: for each fault kind, a capture of two flows, one that
// the fault selects and one it does not; analyze names the kind for the
// first (with the packets worked out from the case) and no fault for the
// second. Each case runs on a pi2hop capture (in and out taps with the
// hop's annotations) and, where the fault shows on the wire, on a pair
// of ingress and egress captures without annotations.
func TestFaultNamed(t *testing.T) {
	const ef = 46 // DSCP EF
	for _, tc := range []struct {
		name        string
		a, b        func(int) fate
		v6          bool
		want        string // kind for flow A, "" for none
		packets     uint64
		text        string // flow A's fault in words
		hopTapsOnly bool   // the fault shows only in the hop's annotations
	}{
		{name: "none", a: clean(aqm.ECT1), b: clean(aqm.ECT1)},
		{name: "none classic", a: clean(aqm.NotECT), b: clean(aqm.ECT0)},
		{name: "bleach", a: func(i int) fate { return fate{in: aqm.ECT1, out: aqm.NotECT} }, b: clean(aqm.ECT1),
			want: "bleach", packets: faultPkts, text: "ECT(1) -> Not-ECT: bleached (bleach)"},
		{name: "bleach IPv6", v6: true, a: func(i int) fate { return fate{in: aqm.ECT1, out: aqm.NotECT} }, b: clean(aqm.ECT1),
			want: "bleach", packets: faultPkts, text: "ECT(1) -> Not-ECT: bleached (bleach)"},
		// The whole byte zeroed: DSCP EF went as well.
		{name: "tos-zero", a: func(i int) fate { return fate{in: aqm.ECT1, dscp: ef, out: aqm.NotECT} },
			b:    func(i int) fate { return fate{in: aqm.ECT1, dscp: ef, outDSCP: ef, out: aqm.ECT1} },
			want: "tos-zero", packets: faultPkts, text: "ECT(1) -> Not-ECT: ToS zeroed, DSCP too (tos-zero)"},
		{name: "tos-zero IPv6", v6: true, a: func(i int) fate { return fate{in: aqm.ECT0, dscp: ef, out: aqm.NotECT} },
			b:    clean(aqm.ECT0),
			want: "tos-zero", packets: faultPkts, text: "ECT(0) -> Not-ECT: ToS zeroed, DSCP too (tos-zero)"},
		{name: "ect1-to-ect0", a: func(i int) fate { return fate{in: aqm.ECT1, out: aqm.ECT0} }, b: clean(aqm.ECT1),
			want: "ect1-to-ect0", packets: faultPkts, text: "ECT(1) -> ECT(0): re-marked (ect1-to-ect0)"},
		{name: "ect0-to-ect1", a: func(i int) fate { return fate{in: aqm.ECT0, out: aqm.ECT1} }, b: clean(aqm.ECT0),
			want: "ect0-to-ect1", packets: faultPkts, text: "ECT(0) -> ECT(1): re-marked (ect0-to-ect1)"},
		// Before the queue: packets that arrive CE (marked upstream) leave
		// as ECT(1); every fourth of 20 is 5.
		{name: "ce-bleach before", a: func(i int) fate {
			if i%4 == 0 {
				return fate{in: aqm.CE, out: aqm.ECT1}
			}
			return fate{in: aqm.ECT1, out: aqm.ECT1}
		}, b: clean(aqm.ECT1), want: "ce-bleach", packets: 5, text: "CE -> ECT(1): CE bleached (ce-bleach)"},
		// After the queue: the AQM marks every fourth packet and the mark is
		// undone; only the hop's annotation shows it.
		{name: "ce-bleach after", a: func(i int) fate {
			return fate{in: aqm.ECT1, out: aqm.ECT1, marked: i%4 == 0}
		}, b: clean(aqm.ECT1), want: "ce-bleach", packets: 5, text: "CE -> ECT(1): CE bleached (ce-bleach)", hopTapsOnly: true},
		{name: "mangle", a: func(i int) fate { return fate{in: aqm.ECT1, out: aqm.CE} }, b: clean(aqm.ECT1),
			want: "mangle", packets: faultPkts, text: "ECT(1) -> CE on every packet with no queue: mangled (mangle)"},
		// Every packet CE because the queue is deep (growing transit, the
		// AQM's own marks) is congestion, not a fault.
		{name: "every packet marked by a queue", a: func(i int) fate {
			return fate{in: aqm.ECT1, out: aqm.CE, marked: true, transit: int64(5+i) * 1e6}
		}, b: clean(aqm.ECT1)},
		// An ECT filter: the flow's ECT packets (two in three) vanish, its
		// Not-ECT ones arrive; 13 of the 20 are ECT (i%3 != 0).
		{name: "drop-ect", a: func(i int) fate {
			if i%3 == 0 {
				return fate{in: aqm.NotECT, out: aqm.NotECT}
			}
			return fate{in: aqm.ECT1, lost: true}
		}, b: clean(aqm.ECT1), want: "drop-ect", packets: 13, text: "ECT packets missing at egress (13 of 13): dropped (drop-ect)"},
		// An outage loses Not-ECT packets as well: not an ECT filter.
		{name: "outage", a: func(i int) fate {
			if i%3 == 0 {
				return fate{in: aqm.NotECT, lost: true}
			}
			return fate{in: aqm.ECT1, lost: true}
		}, b: clean(aqm.ECT1)},
	} {
		for _, pair := range []bool{false, true} {
			if pair && tc.hopTapsOnly {
				continue
			}
			name := tc.name
			if pair {
				name += " ingress-egress"
			}
			t.Run(name, func(t *testing.T) {
				inputs := writeFaultCase(t, t.TempDir(), pair, tc.v6, [2]func(int) fate{tc.a, tc.b})
				res, err := Analyze(inputs, Options{})
				if err != nil {
					t.Fatal(err)
				}
				dir := res.Direction("up")
				if pair {
					dir = res.Direction("path")
				}
				if dir == nil || !dir.ECNFaultsChecked {
					t.Fatalf("no direction with an in and an out point: %+v", res.Directions)
				}
				byPort := map[uint16]*FlowResult{}
				for _, f := range dir.Flows {
					byPort[f.Key.SrcPort] = f
				}
				a, b := byPort[5000], byPort[6000]
				if a == nil || b == nil {
					t.Fatalf("flows %v: want ports 5000 and 6000", dir.Flows)
				}
				if len(b.ECNFaults) != 0 {
					t.Errorf("unaffected flow: faults %+v, want none", b.ECNFaults)
				}
				var table bytes.Buffer
				if err := res.WriteTable(&table); err != nil {
					t.Fatal(err)
				}
				if tc.want == "" {
					if len(a.ECNFaults) != 0 {
						t.Errorf("flow A: faults %+v, want none", a.ECNFaults)
					}
					if dir.FaultyFlows != 0 || !strings.Contains(table.String(), "ECN path faults: none in 2 flows") {
						t.Errorf("%d faulty flows; the table says:\n%s", dir.FaultyFlows, table.String())
					}
					return
				}
				if len(a.ECNFaults) != 1 {
					t.Fatalf("flow A: faults %+v, want one of kind %s", a.ECNFaults, tc.want)
				}
				got := a.ECNFaults[0]
				if got.Kind != tc.want || got.Packets != tc.packets || got.Text != tc.text {
					t.Errorf("flow A: %s, %d packets, %q; want %s, %d, %q", got.Kind, got.Packets, got.Text, tc.want, tc.packets, tc.text)
				}
				if dir.FaultyFlows != 1 || !strings.Contains(table.String(), "ECN path faults in 1 of 2 flows") ||
					!strings.Contains(table.String(), tc.text) {
					t.Errorf("%d faulty flows; the table says:\n%s", dir.FaultyFlows, table.String())
				}
			})
		}
	}
}

// TestFaultNotChecked: a single capture point cannot show a path fault,
// and the table says so instead of "none".
func TestFaultNotChecked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "one.pcapng")
	c, err := pcap.NewCapture(path, pcap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	iface := c.AddInterface("eth0")
	pkt := pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 17, SPort: 1, DPort: 2, ECN: aqm.ECT1, Payload: 10}.Build()
	if !c.OfferWait(iface, scenarioStart, pkt, len(pkt), nil) {
		t.Fatal("the capture took no record")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := Analyze([]Input{{Path: path}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := res.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if res.Directions[0].ECNFaultsChecked || !strings.Contains(table.String(), "ECN path faults: not checked") {
		t.Errorf("checked %v; table:\n%s", res.Directions[0].ECNFaultsChecked, table.String())
	}
}

// Packets a fault before the queue moved from L to C are counted as
// moved, in the JSON and in the table, not left as L arrivals that were
// neither sent nor dropped.
func TestMovedBeforeTheQueue(t *testing.T) {
	bleached := func(int) fate { return fate{in: aqm.ECT1, out: aqm.NotECT, moved: true} }
	inputs := writeFaultCase(t, t.TempDir(), false, false, [2]func(int) fate{bleached, clean(aqm.ECT0)})
	res, err := Analyze(inputs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := res.Directions[0]
	c, l := d.Classes[0], d.Classes[1]
	if l.In != faultPkts || l.Sent != 0 || l.MovedOut != faultPkts || c.MovedIn != faultPkts || c.MovedOut != 0 || l.MovedIn != 0 ||
		c.Sent != 2*faultPkts {
		t.Errorf("L in %d sent %d moved out %d in %d; C sent %d moved in %d out %d; want L %d in, 0 sent, all moved to C, C sent %d",
			l.In, l.Sent, l.MovedOut, l.MovedIn, c.Sent, c.MovedIn, c.MovedOut, faultPkts, 2*faultPkts)
	}
	var b strings.Builder
	if err := res.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if want := "L→C before the queue: 20 packets came in as L and were queued in C"; !strings.Contains(b.String(), want) {
		t.Errorf("%q not in:\n%s", want, b.String())
	}
	clean := writeFaultCase(t, t.TempDir(), false, false, [2]func(int) fate{clean(aqm.ECT1), clean(aqm.ECT0)})
	if res, err = Analyze(clean, Options{}); err != nil {
		t.Fatal(err)
	}
	if c, l := res.Directions[0].Classes[0], res.Directions[0].Classes[1]; c.MovedIn+c.MovedOut+l.MovedIn+l.MovedOut != 0 {
		t.Errorf("a clean path moved packets: %+v %+v", c, l)
	}
}
