package replay

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/pcap/pcaptest"
	"github.com/pi2hop/pi2hop/shaper"
)

// outcome spells a packet's fate as a test states it: the codepoint it
// left with, or "drop".
func outcome(r rec) string {
	if r.kind == "drop" {
		return "drop"
	}
	return r.ev.ECNOut().String()
}

// fates runs in through cfg with fault and returns each packet's
// outcome, the queue each was sorted into (C or L), and the result.
func fates(t *testing.T, cfg Config, fault string, in []Packet) ([]string, string, []rec, Result) {
	t.Helper()
	f, err := shaper.ParseFault(fault)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Link.Fault = f
	r, res := run(t, cfg, in)
	out := make([]string, len(in))
	var queues strings.Builder
	recs := make([]rec, len(in))
	for i := range in {
		recs[i] = r.fate(t, i)
		out[i] = outcome(recs[i])
		queues.WriteString(recs[i].ev.Verdict.Class.String())
	}
	return out, queues.String(), recs, res
}

// Each kind, before and after the queue, on an ECT(1), an ECT(0), a CE
// and a Not-ECT packet (DSCP 10 each) spaced so that nothing queues and
// the AQM marks nothing: what comes out is the kind's own rewrite, worked
// out from its definition. Before the queue the queue classifies the
// faulted codepoint (ECN mask l4s_ect: ECT(1) and CE to L); after it, the
// one the packet came with (L C L C).
func TestFaultKindsReplay(t *testing.T) {
	var in []Packet
	for i, e := range []aqm.ECN{aqm.ECT1, aqm.ECT0, aqm.CE, aqm.NotECT} {
		in = append(in, Packet{Time: int64(i) * ms, Len: 1000, ECN: e, DSCP: 10})
	}
	const N, E1, E0, CE, D = "Not-ECT", "ECT(1)", "ECT(0)", "CE", "drop"
	for _, tt := range []struct {
		kind        string
		want        [4]string
		n           uint64 // packets the fault rewrote or dropped
		queueBefore string
	}{
		{"none", [4]string{E1, E0, CE, N}, 0, "LCLC"},
		{"bleach", [4]string{N, N, N, N}, 3, "CCCC"},
		{"tos-zero", [4]string{N, N, N, N}, 4, "CCCC"}, // the Not-ECT one loses its DSCP
		{"ect1-to-ect0", [4]string{E0, E0, CE, N}, 1, "CCLC"},
		{"ect0-to-ect1", [4]string{E1, E1, CE, N}, 1, "LLLC"},
		{"ce-bleach", [4]string{E1, E0, E1, N}, 1, "LCLC"}, // CE came as CE: ECT(1)
		{"mangle", [4]string{CE, CE, CE, N}, 2, "LLLC"},
		{"drop-ect", [4]string{D, D, D, N}, 3, "???C"},
	} {
		for _, where := range []string{"before", "after"} {
			t.Run(tt.kind+","+where, func(t *testing.T) {
				out, queues, recs, res := fates(t, dualpi2(100e6, nil), tt.kind+","+where, in)
				if [4]string(out) != tt.want {
					t.Errorf("codepoints out %v, want %v", out, tt.want)
				}
				k, _ := shaper.ParseFaultKind(tt.kind)
				if got := res.Faults[k]; got != tt.n && k != shaper.FaultNone {
					t.Errorf("counted %d packets under %s, want %d", got, tt.kind, tt.n)
				}
				wantQ := tt.queueBefore
				if where == "after" {
					wantQ = "LCLC"
				}
				for i := range 4 {
					if wantQ[i] != '?' && queues[i] != wantQ[i] {
						t.Errorf("packet %d sorted into %c, want %c (queues %s)", i, queues[i], wantQ[i], queues)
					}
				}
				for i, r := range recs {
					if r.ev.ECNIn() != in[i].ECN {
						t.Errorf("packet %d: ecn in %v, want %v as it came", i, r.ev.ECNIn(), in[i].ECN)
					}
					if r.kind == "drop" {
						wantAt := AtEnqueue
						if where == "after" {
							wantAt = OnLink
						}
						if r.ev.Verdict.Reason != aqm.ReasonFault || r.where != wantAt {
							t.Errorf("packet %d dropped by %s at %s, want ecn_fault at %s", i, r.ev.Verdict.Reason, r.where, wantAt)
						}
						continue
					}
					dscp := r.ev.DSOut(10<<2|uint8(in[i].ECN)) >> 2
					if want := map[bool]uint8{true: 0, false: 10}[tt.kind == "tos-zero"]; dscp != want {
						t.Errorf("packet %d leaves with DSCP %d, want %d", i, dscp, want)
					}
					if changed := out[i] != in[i].ECN.String() || dscp != 10; changed != (r.ev.Fault != shaper.FaultNone) {
						t.Errorf("packet %d: %v -> %s, event's fault %s", i, in[i].ECN, out[i], r.ev.Fault)
					}
				}
			})
		}
	}
}

// Three ECT(1) packets of 1250 B at once on a 1 Mbit/s link: each takes
// 10 ms, so the second leaves the queue after 10 ms and the third after
// 20 ms, over the 1 ms step threshold (min_qlen_step 0): the AQM marks
// both CE, the first goes unmarked. After the queue a fault sees those
// marks: ce-bleach undoes them (the congestion signal is lost), bleach
// wipes them, ect1-to-ect0 re-marks only the unmarked one; before the
// queue ce-bleach finds no CE and the marks survive.
func TestFaultAfterSeesAQMMarks(t *testing.T) {
	in := pkts(1250, aqm.ECT1, 0, 0, 0)
	const N, E1, E0, CE, D = "Not-ECT", "ECT(1)", "ECT(0)", "CE", "drop"
	for _, tt := range []struct {
		fault string
		want  [3]string
		n     uint64
	}{
		{"none", [3]string{E1, CE, CE}, 0},
		{"ce-bleach,after", [3]string{E1, E1, E1}, 2},
		{"ce-bleach", [3]string{E1, CE, CE}, 0},
		{"bleach,after", [3]string{N, N, N}, 3},
		{"ect1-to-ect0,after", [3]string{E0, CE, CE}, 1},
		{"mangle,after", [3]string{CE, CE, CE}, 1},
		{"drop-ect,after", [3]string{D, D, D}, 3},
	} {
		t.Run(tt.fault, func(t *testing.T) {
			out, _, recs, res := fates(t, dualpi2(1e6, nil), tt.fault, in)
			if [3]string(out) != tt.want {
				t.Errorf("codepoints out %v, want %v", out, tt.want)
			}
			var n uint64
			for _, c := range res.Faults {
				n += c
			}
			if n != tt.n {
				t.Errorf("fault counted %d packets, want %d", n, tt.n)
			}
			// The AQM's own verdicts are the same whatever the fault after
			// it does: marks on the second and third.
			for i, r := range recs {
				marked := r.ev.Verdict.Action == aqm.Mark || (r.kind == "drop" && i > 0 && r.ev.FaultFrom == aqm.CE)
				if marked != (i > 0) {
					t.Errorf("packet %d: verdict %s (fault %s from %v), want the AQM to mark packets 1 and 2", i, r.ev.Verdict.Action, r.ev.Fault, r.ev.FaultFrom)
				}
			}
			if tt.fault == "drop-ect,after" {
				for i, r := range recs {
					if want := int64(i+1) * 10 * ms; r.at != want {
						t.Errorf("packet %d dropped at %d, want %d (as it left the link)", i, r.at, want)
					}
				}
			}
		})
	}
}

// udp4 is an IPv4 packet of 100 bytes, protocol proto (UDP or TCP),
// ECT(1), with the given destination port and a correct header checksum.
func udp4(proto byte, dport uint16) []byte {
	headers := 28
	if proto == 6 {
		headers = 40
	}
	return pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: proto, SPort: 4000, DPort: dport, ECN: aqm.ECT1, Payload: 100 - headers}.Build()
}

// after=, share= and the selectors take exactly the packets they name.
// Six ECT(1) packets 1 ms apart (frames from a capture, so the selectors
// can read ports); the fault is bleach before the queue unless named.
func TestFaultSelection(t *testing.T) {
	flows := []struct {
		proto byte
		dport uint16
	}{{17, 5000}, {17, 6000}, {6, 5000}, {17, 5000}, {17, 5000}, {6, 6000}}
	var in []Packet
	for i, f := range flows {
		fr := udp4(f.proto, f.dport)
		in = append(in, Packet{Time: int64(i) * ms, Len: 100, ECN: aqm.ECT1, Frame: fr, CapLen: len(fr)})
	}
	const N, E1, E0 = "Not-ECT", "ECT(1)", "ECT(0)"
	for _, tt := range []struct {
		fault string
		want  [6]string
	}{
		{"bleach", [6]string{N, N, N, N, N, N}},
		{"bleach,after=2p", [6]string{E1, E1, N, N, N, N}},
		{"bleach,after=3ms", [6]string{E1, E1, E1, N, N, N}}, // from the first packet, at 0
		{"bleach,after,after=3ms", [6]string{E1, E1, E1, N, N, N}},
		{"bleach,proto=tcp", [6]string{E1, E1, N, E1, E1, N}},
		{"bleach,dport=5000", [6]string{N, E1, N, N, N, E1}},
		{"ect1-to-ect0,proto=udp,dport=5000", [6]string{E0, E1, E1, E0, E0, E1}},
		// The count is of matching packets: the first UDP 5000 one passes.
		{"ect1-to-ect0,after=1p,proto=udp,dport=5000", [6]string{E1, E1, E1, E0, E0, E1}},
		{"bleach,after=4ms,proto=udp", [6]string{E1, E1, E1, E1, N, E1}},
		{"bleach,sport=4000,dport=6000", [6]string{E1, N, E1, E1, E1, N}},
		{"bleach,sport=4001", [6]string{E1, E1, E1, E1, E1, E1}},
	} {
		t.Run(tt.fault, func(t *testing.T) {
			out, _, recs, _ := fates(t, dualpi2(100e6, nil), tt.fault, in)
			if [6]string(out) != tt.want {
				t.Errorf("codepoints out %v, want %v", out, tt.want)
			}
			// The rewrite a hop applies to the bytes keeps the IPv4
			// header checksum right (RFC 1624, as for CE marks).
			for i, r := range recs {
				fr := udp4(flows[i].proto, flows[i].dport)
				h := aqm.Header(fr)
				h.SetDSField(r.ev.DSOut(h.DSField()))
				if h.ECN().String() != tt.want[i] || aqm.Checksum(fr[:20]) != 0 {
					t.Errorf("packet %d rewritten to %v, checksum check %#04x (want %s, 0)", i, h.ECN(), aqm.Checksum(fr[:20]), tt.want[i])
				}
			}
		})
	}
}

// share= takes each packet the other options take with one draw from
// the link's random stream (seeded: the same replay takes the same
// packets): the packets bleached are those whose draw fell under the
// share, and about that share of them.
func TestFaultShare(t *testing.T) {
	const n = 2000
	in := make([]Packet, n)
	for i := range in {
		in[i] = Packet{Time: int64(i) * ms, Len: 100, ECN: aqm.ECT1}
	}
	for _, share := range []float64{0.3, 0.5} {
		t.Run(fmt.Sprint(share), func(t *testing.T) {
			cfg := dualpi2(100e6, nil)
			out, _, _, res := fates(t, cfg, fmt.Sprintf("bleach,share=%g%%", share*100), in)
			draws := rand.New(rand.NewPCG(cfg.Seed, streamLoss))
			taken := 0
			for i := range out {
				want := "ECT(1)"
				if draws.Float64() < share {
					want = "Not-ECT"
					taken++
				}
				if out[i] != want {
					t.Fatalf("packet %d left with %s, want %s", i, out[i], want)
				}
			}
			if res.Faults[shaper.FaultBleach] != uint64(taken) {
				t.Errorf("counted %d, bleached %d", res.Faults[shaper.FaultBleach], taken)
			}
			if got := float64(taken) / n; got < share-0.05 || got > share+0.05 {
				t.Errorf("took %.3f of the packets, want %.2f ± 0.05", got, share)
			}
			again, _, _, _ := fates(t, cfg, fmt.Sprintf("bleach,share=%g%%", share*100), in)
			if strings.Join(again, " ") != strings.Join(out, " ") {
				t.Error("the same seed took other packets")
			}
		})
	}
}
