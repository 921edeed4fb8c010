package aqm

import (
	"math"
	"testing"
)

func TestFIFO(t *testing.T) {
	tests := []struct {
		name     string
		cfg      FIFOConfig
		accepted int // of 10 packets of 1000 bytes
	}{
		{"packets", FIFOConfig{Limit: 4}, 4},
		{"bytes", FIFOConfig{ByteLimit: 3500}, 3},
		{"bytes exactly", FIFOConfig{ByteLimit: 3000}, 3},
		{"both, packets bind", FIFOConfig{Limit: 2, ByteLimit: 5000}, 2},
		{"both, bytes bind", FIFOConfig{Limit: 8, ByteLimit: 5000}, 5},
	}
	for _, tt := range tests {
		f, err := NewFIFO(tt.cfg)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		accepted := 0
		for i := range 10 {
			m := pkt(ECN(i%4), 1000)
			m.Slot = int32(i)
			m.Class = LLLL // ignored: a FIFO has one class
			v := f.Enqueue(m, int64(i))
			if v.Class != Classic || (v.Action != Pass && (v.Action != Drop || v.Reason != ReasonLimit)) {
				t.Fatalf("%s: verdict %+v", tt.name, v)
			}
			if v.Action == Pass {
				accepted++
			}
		}
		if accepted != tt.accepted {
			t.Errorf("%s: accepted %d, want %d", tt.name, accepted, tt.accepted)
		}
		s := f.Stats(20)
		if s.Overlimits != uint64(10-accepted) || s.DropsBy[ReasonLimit] != s.Overlimits || s.DelayC != 20 {
			t.Errorf("%s: stats %+v", tt.name, s)
		}
		for i := range accepted {
			m, v := mustDequeue(t, f, 30)
			if m.Slot != int32(i) || v.Action != Pass || m.ECN != ECN(i%4) || m.Arrival != int64(i) {
				t.Errorf("%s: dequeue %d got %+v %+v", tt.name, i, m, v)
			}
		}
		if _, _, ok := f.Dequeue(30); ok {
			t.Errorf("%s: not empty", tt.name)
		}
		if p, b := f.Len(); p != 0 || b != 0 {
			t.Errorf("%s: Len %d %d", tt.name, p, b)
		}
	}
	if _, err := NewFIFO(FIFOConfig{}); err == nil {
		t.Error("NewFIFO accepted no limit")
	}
	f, _ := NewFIFO(FIFOConfig{Limit: 1})
	f.Advance(1e18)
	if f.NextUpdate() != math.MaxInt64 {
		t.Error("FIFO has periodic work")
	}
}

func TestNewQueue(t *testing.T) {
	for _, s := range []Spec{
		{Kind: KindDualPI2, DualPI2: DefaultConfig()},
		{Kind: KindFIFO, FIFO: FIFOConfig{Limit: 100}},
	} {
		q, err := NewQueue(s, zeroRand())
		if err != nil || q == nil {
			t.Errorf("%s: %v", s.Kind, err)
		}
	}
	for _, s := range []Spec{{Kind: "red"}, {Kind: ""}, {Kind: KindFIFO}, {Kind: KindDualPI2}} {
		if _, err := NewQueue(s, zeroRand()); err == nil {
			t.Errorf("NewQueue(%+v) accepted", s)
		}
	}
}

// The ring grows past its preallocation (a limit above maxPrealloc) and
// keeps FIFO order across the wrap.
func TestRingGrowth(t *testing.T) {
	r := newRing(3)
	if len(r.buf) != 4 {
		t.Fatalf("capacity %d, want 4", len(r.buf))
	}
	next := int32(0)
	for i := range int32(100) {
		r.push(Meta{Slot: i, Len: 1})
		if i%3 == 0 {
			if m := r.pop(); m.Slot != next {
				t.Fatalf("pop %d, want %d", m.Slot, next)
			}
			next++
		}
	}
	for r.len() > 0 {
		if m := r.pop(); m.Slot != next {
			t.Fatalf("pop %d, want %d", m.Slot, next)
		}
		next++
	}
	if next != 100 || r.bytes != 0 {
		t.Fatalf("got %d packets, %d bytes left", next, r.bytes)
	}
}
