package shaper

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
)

func TestParseFault(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Fault
		out  string // String(); "" = in
	}{
		{"none", Fault{}, ""},
		{"bleach", Fault{Kind: FaultBleach}, ""},
		{"ce-bleach,after", Fault{Kind: FaultCEBleach, After: true}, ""},
		{"bleach,before,after=2s,share=30%", Fault{Kind: FaultBleach, StartAfter: 2e9, Share: 0.3}, "bleach,after=2s,share=30%"},
		{"ect1-to-ect0,after=100p,proto=udp,dport=5000",
			Fault{Kind: FaultECT1ToECT0, StartPackets: 100, Proto: 17, Dport: 5000, Match: MatchProto | MatchDport}, ""},
		{"drop-ect,after,proto=tcp,sport=443", Fault{Kind: FaultDropECT, After: true, Proto: 6, Sport: 443, Match: MatchProto | MatchSport}, ""},
		{"mangle,proto=132,share=100%", Fault{Kind: FaultMangle, Proto: 132, Match: MatchProto}, "mangle,proto=132"},
		{" tos-zero , after=1.5ms ", Fault{Kind: FaultTOSZero, StartAfter: 1_500_000}, "tos-zero,after=1.5ms"},
		{"ect0-to-ect1,share=12.5%", Fault{Kind: FaultECT0ToECT1, Share: 0.125}, ""},
	} {
		got, err := ParseFault(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseFault(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			continue
		}
		want := tt.out
		if want == "" {
			want = tt.in
		}
		if got.String() != want {
			t.Errorf("ParseFault(%q).String() = %q, want %q", tt.in, got.String(), want)
		}
		if again, err := ParseFault(got.String()); err != nil || again != got {
			t.Errorf("%q does not read back: %+v, %v", got.String(), again, err)
		}
	}
	for _, tt := range []struct{ in, says string }{
		{"", `unknown fault kind ""`},
		{"bleech", "want one of none, bleach, tos-zero"},
		{"bleach,sideways", `unknown option "sideways"`},
		{"bleach,before,after", "before/after given twice"},
		{"bleach,after=2", "want a duration (2s, 500ms) or N packets (100p)"},
		{"bleach,after=-1s", "want a duration"},
		{"bleach,after=xp", "want N packets as Np"},
		{"bleach,after=1s,after=2p", "after= given twice"},
		{"bleach,share=30", "want a percentage above 0 and at most 100"},
		{"bleach,share=0%", "want a percentage"},
		{"bleach,share=101%", "want a percentage"},
		{"bleach,proto=sctp", "want udp, tcp or a protocol number 0..255"},
		{"bleach,dport=70000", "want a port 0..65535"},
		{"bleach,sport=1,sport=2", "sport= given twice"},
	} {
		_, err := ParseFault(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.says) || !strings.Contains(err.Error(), "want") {
			t.Errorf("ParseFault(%q) error %v, want one saying %q", tt.in, err, tt.says)
		}
	}
}

// validTransition is Apple's list of the ECN field's only valid changes
// along a path: Not-ECT stays, ECT(1) stays or becomes CE, ECT(0) stays
// or becomes CE, CE stays.
func validTransition(in, out aqm.ECN) bool {
	return in == out || (out == aqm.CE && in != aqm.NotECT)
}

// faultTransitions are the changes each kind adds to the valid ones, and
// nothing else: what a fault is allowed to do.
func faultTransition(k FaultKind, in, out aqm.ECN) bool {
	switch k {
	case FaultBleach, FaultTOSZero:
		return in != aqm.NotECT && out == aqm.NotECT
	case FaultECT1ToECT0:
		return in == aqm.ECT1 && out == aqm.ECT0
	case FaultECT0ToECT1:
		return in == aqm.ECT0 && out == aqm.ECT1
	case FaultCEBleach:
		return in == aqm.CE && out == aqm.ECT1 // it came as CE: ECT(1)
	}
	return false // mangle's ECT -> CE is valid already; drop-ect drops
}

// Any trace through DualPI2 with any fault: every packet delivered made
// a valid transition or one of its fault's own; a drop by the fault
// (reason ecn_fault) is drop-ect's and never a Not-ECT packet's; the
// counters balance.
func FuzzFaultTransitions(f *testing.F) {
	f.Add(uint8(FaultCEBleach), true, uint16(800), []byte{1, 1, 1, 2, 3, 0, 0x41, 0x81, 0xc1})
	f.Add(uint8(FaultBleach), false, uint16(100), []byte{1, 2, 3, 0, 1, 2, 3, 0})
	f.Add(uint8(FaultMangle), true, uint16(3000), []byte{0x11, 0x12, 0x13, 0x10, 0x21})
	f.Add(uint8(FaultDropECT), true, uint16(50), []byte{1, 1, 1, 1, 1, 1, 2, 3, 0})
	f.Add(uint8(FaultECT1ToECT0), false, uint16(10), []byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	f.Add(uint8(FaultTOSZero), true, uint16(1), []byte{0xfd, 0xfe, 0xff, 0xfc})
	f.Fuzz(func(t *testing.T, kind uint8, after bool, kbps uint16, trace []byte) {
		k := FaultKind(kind % uint8(NumFaultKinds))
		// A long trace on a slow link is hours of PI updates: keep each
		// input to a few seconds of virtual time per packet at most.
		trace = trace[:min(len(trace), 400)]
		fault := Fault{Kind: k, After: after}
		if len(trace) > 0 && trace[0]&0x80 != 0 {
			fault.Share = 0.5
		}
		q, err := aqm.NewDualPI2(aqm.DefaultConfig(), rand.New(rand.NewPCG(2, 0x5eed)))
		if err != nil {
			t.Fatal(err)
		}
		l, err := NewLink(Config{Rate: Const{uint64(kbps%5000+100) * 1000}, Delay: 1e6, Fault: fault}, q, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		var evs []Event
		in := map[int32]aqm.ECN{}
		now := int64(0)
		for i, b := range trace {
			// Each byte: the codepoint in its low bits, the gap to the
			// next arrival (0..15 ms) in its high nibble.
			now += int64(b>>4) * 1e6
			evs = l.Poll(now, evs)
			m := aqm.Meta{Len: 1000, Slot: int32(i), ECN: aqm.ECN(b & 3), DSCP: b >> 2 & 0x3f}
			in[m.Slot] = m.ECN
			if v := l.Enqueue(m, now); v.Action == aqm.Drop {
				evs = append(evs, l.RefusedEvent())
			}
		}
		for l.Pending() > 0 {
			evs = l.Poll(l.Next(), evs)
		}
		var faulted uint64
		for _, e := range evs {
			from := in[e.Meta.Slot]
			if e.ECNIn() != from {
				t.Fatalf("packet %d: ECNIn %v, came as %v", e.Meta.Slot, e.ECNIn(), from)
			}
			if e.Fault != FaultNone {
				faulted++
				if e.Fault != k {
					t.Fatalf("packet %d: fault %s, link has %s", e.Meta.Slot, e.Fault, k)
				}
			}
			if e.Verdict.Action == aqm.Drop {
				if e.Verdict.Reason == aqm.ReasonFault && (k != FaultDropECT || from == aqm.NotECT) {
					t.Fatalf("packet %d (%v) dropped by fault %s", e.Meta.Slot, from, k)
				}
				continue
			}
			out := e.ECNOut()
			if !validTransition(from, out) && !faultTransition(k, from, out) {
				t.Fatalf("packet %d: %v -> %v under %s (after %v): neither valid nor the fault's", e.Meta.Slot, from, out, k, after)
			}
			if e.Fault == FaultTOSZero && e.DSOut(0xfc|uint8(from)) != 0 {
				t.Fatalf("packet %d: tos-zero left DS %#x", e.Meta.Slot, e.DSOut(0xfc|uint8(from)))
			}
		}
		st := l.Stats()
		var counted uint64
		for _, n := range st.Faults {
			counted += n
		}
		if counted != faulted {
			t.Fatalf("fault counters %d, events with a fault %d", counted, faulted)
		}
		if st.Enqueued != st.Delivered+st.Lost+st.Dropped+st.FaultDrops {
			t.Fatalf("enqueued %d != delivered %d + lost %d + dropped %d + fault drops %d", st.Enqueued, st.Delivered, st.Lost, st.Dropped, st.FaultDrops)
		}
	})
}
