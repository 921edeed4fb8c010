package aqm

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// Every kind builds from its DefaultSpec, validates, names itself in
// Stats, and sizes its buffers by its packet limit.
func TestSpecKinds(t *testing.T) {
	limits := map[string]int{
		KindDualPI2: DefaultLimit, KindFIFO: DefaultLimit, KindCoDel: 1000, KindPIE: 1000,
		KindFQCodel: 10240 + 64, KindDOCSIS: DefaultLimit,
	}
	for _, kind := range Kinds {
		s, ok := DefaultSpec(kind)
		if !ok {
			t.Fatalf("DefaultSpec(%q): unknown", kind)
		}
		if err := s.Validate(); err != nil {
			t.Errorf("%s: defaults do not validate: %v", kind, err)
		}
		q, err := NewQueue(s, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatalf("NewQueue(%s): %v", kind, err)
		}
		if got := q.Stats(0).Kind; got != kind {
			t.Errorf("%s: Stats.Kind %q", kind, got)
		}
		if s.Limit() != limits[kind] {
			t.Errorf("%s: Limit %d, want %d", kind, s.Limit(), limits[kind])
		}
		if err := ChangeQueue(q, s, 0, nil); err != nil {
			t.Errorf("%s: ChangeQueue to the same spec: %v", kind, err)
		}
		if err := s.LiveChange(s); err != nil {
			t.Errorf("%s: LiveChange to itself: %v", kind, err)
		}
	}
	if _, ok := DefaultSpec("red"); ok {
		t.Error(`DefaultSpec("red") known`)
	}
	var uk *UnknownKindError
	if err := (Spec{Kind: "red"}).Validate(); !errors.As(err, &uk) || uk.Kind != "red" {
		t.Errorf("unknown kind: %v", err)
	}
	if _, err := NewQueue(Spec{Kind: "red"}, nil); !errors.As(err, &uk) {
		t.Errorf("NewQueue of an unknown kind: %v", err)
	}
	s, _ := DefaultSpec(KindCoDel)
	s.CoDel.Interval = 0
	var ce *ConfigError
	if err := s.Validate(); !errors.As(err, &ce) || ce.Field != "interval" {
		t.Errorf("codel interval 0: %v", err)
	}
	a, _ := DefaultSpec(KindPIE)
	b, _ := DefaultSpec(KindCoDel)
	if a.LiveChange(b) == nil {
		t.Error("pie -> codel accepted live")
	}
}
