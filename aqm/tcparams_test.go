package aqm

import "testing"

// TestTCParams: the kernels' defaults print as tc prints them on a box
// (dualpi2's as its tc-testing dump shows them, with memlimit for our
// 1500-byte MTU: 10000·2·1500), and a changed value shows up.
func TestTCParams(t *testing.T) {
	spec := func(kind string, edit func(*Spec)) Spec {
		s, ok := DefaultSpec(kind)
		if !ok {
			t.Fatalf("no default spec for %q", kind)
		}
		if edit != nil {
			edit(&s)
		}
		return s
	}
	tests := []struct {
		name string
		s    Spec
		want string
	}{
		{"dualpi2 defaults", spec(KindDualPI2, nil),
			"limit 10000p memlimit 30000000B target 15ms tupdate 16ms alpha 0.156250 beta 3.195312 step_thresh 1ms min_qlen_step 0p coupling_factor 2 drop_on_overload drop_dequeue classic_protection 10% l4s_ect split_gso"},
		{"dualpi2 changed", spec(KindDualPI2, func(s *Spec) {
			c := &s.DualPI2
			c.Target, c.StepThresh, c.StepInPackets, c.DropOverload, c.DropEnqueue, c.ECNMask, c.ClassicProtection = 7_000_000, 3, true, false, true, 3, 0
		}),
			"limit 10000p memlimit 30000000B target 7ms tupdate 16ms alpha 0.156250 beta 3.195312 step_thresh 3p min_qlen_step 0p coupling_factor 2 overflow drop_enqueue classic_protection 0% any_ect split_gso"},
		{"codel defaults", spec(KindCoDel, nil), "limit 1000p target 5ms interval 100ms"},
		{"codel ecn, ce_threshold", spec(KindCoDel, func(s *Spec) { s.CoDel.ECN, s.CoDel.CEThreshold = true, 1_500_000 }),
			"limit 1000p target 5ms ce_threshold 1.5ms interval 100ms ecn"},
		{"pie defaults", spec(KindPIE, nil), "limit 1000p target 15ms tupdate 15ms alpha 2 beta 20"},
		{"fq_codel defaults", spec(KindFQCodel, nil), "limit 10240p flows 1024 quantum 1514 target 5ms interval 100ms memory_limit 32Mb ecn drop_batch 64"},
		{"fq_codel selector", spec(KindFQCodel, func(s *Spec) {
			s.FQCodel.CEThreshold, s.FQCodel.CESelector, s.FQCodel.CEMask = 500_000, 1, 1
		}), "limit 10240p flows 1024 quantum 1514 target 5ms ce_threshold 500us ce_threshold_selector 0x1/0x1 interval 100ms memory_limit 32Mb ecn drop_batch 64"},
		{"fifo", spec(KindFIFO, nil), "limit 10000p"},
		{"docsis defaults", spec(KindDOCSIS, nil),
			"limit 10000p memlimit 30000000B target 10ms tupdate 16ms alpha 0.156250 beta 3.195312 coupling_factor 2 classic_protection 10% l4s_ect maxth 1ms lg_range 19 queue_protection"},
	}
	for _, tt := range tests {
		if got := TCLine(tt.s.TCParams()); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
}

func TestTCTimeAndSize(t *testing.T) {
	for ns, want := range map[int64]string{15_000_000: "15ms", 1_500_000: "1.5ms", 500_000: "500us", 2_000_000_000: "2s", 999: "999ns", 100_000_000: "100ms"} {
		if got := TCTime(ns); got != want {
			t.Errorf("TCTime(%d) = %s, want %s", ns, got, want)
		}
	}
	for b, want := range map[uint64]string{32 << 20: "32Mb", 64 << 10: "64Kb", 1500: "1500b"} {
		if got := TCSize(b); got != want {
			t.Errorf("TCSize(%d) = %s, want %s", b, got, want)
		}
	}
}

// The kernel keeps a DualPI2 gain scaled to its own units and dumps it
// back truncated: 41 (0.16015625 Hz) -> floor(41·(2^32−1)/4/1e9) = 44
// -> floor(44·1e9·4/(2^32−1)) = 40, 0.15625 Hz; 819 -> 879 -> 818,
// 3.1953125 Hz.
func TestGainReadBack(t *testing.T) {
	for _, tt := range []struct {
		nl   uint32
		want float64
	}{{41, 0.15625}, {819, 3.1953125}} {
		if got := GainReadBack(tt.nl); got != tt.want {
			t.Errorf("GainReadBack(%d) = %v, want %v", tt.nl, got, tt.want)
		}
	}
}
