package testbed

import (
	"testing"
	"time"
)

func TestWorstIn(t *testing.T) {
	s := []queueSample{
		{at: 0, floor: -1},
		{at: 500 * time.Millisecond, worst: 7e6, floor: 2e6, floorRT: true},
		{at: 1200 * time.Millisecond, worst: 1e6, floor: 9e6, floorRT: true},
		{at: 2000 * time.Millisecond, worst: 3e6, floor: 1e6, floorRT: true},
	}
	w, f, rt := worstIn(s, 500*time.Millisecond, 2*time.Second)
	if w != 3e6 || f != 9e6 || !rt {
		t.Errorf("worstIn(0.5s, 2s] = %d, %d, %v; want 3e6, 9e6, true", w, f, rt)
	}
	hop, floor := worstPerSecond(s)
	if len(hop) != 2 || hop[0] != 7 || hop[1] != 3 || floor[0] != 2 || floor[1] != 9 {
		t.Errorf("worstPerSecond = %v, %v; want [7 3], [2 9]", hop, floor)
	}
	if _, f, rt := worstIn(s[:1], -1, time.Second); f != -1 || rt {
		t.Errorf("without a probe: floor %d, realtime %v; want -1, false", f, rt)
	}
}
