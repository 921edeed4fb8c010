package hop

import "testing"

func TestSleepClass(t *testing.T) {
	for _, tt := range []struct {
		d    int64
		want int
	}{{200_000, 0}, {499_999, 0}, {500_000, 1}, {1_999_999, 1}, {2_000_000, 2}, {10_000_000, 3}} {
		if got := sleepClass(tt.d); got != tt.want {
			t.Errorf("sleepClass(%d) = %d, want %d", tt.d, got, tt.want)
		}
	}
}

// The learnt lead follows a high envelope of the lateness: a run of late
// wake-ups raises it to near their lateness, early ones lower it slowly,
// and it stays within its bounds.
func TestSpinLead(t *testing.T) {
	o := &pacer{spin: spinAuto}
	const d = 10_000_000 // a 10 ms sleep: class 3
	if got := o.spinLead(3, d); got != initialLate+leadMargin {
		t.Fatalf("first lead %d, want %d", got, initialLate+leadMargin)
	}
	for range 40 {
		o.learnLateness(3, 120_000)
	}
	if got := o.spinLead(3, d); got < 115_000+leadMargin || got > 120_000+leadMargin {
		t.Errorf("lead after 40 wake-ups 120 µs late: %d, want ~%d", got, 120_000+leadMargin)
	}
	o.learnLateness(3, 20_000)
	if got := o.spinLead(3, d); got < 110_000 {
		t.Errorf("one early wake-up dropped the lead to %d: it must fall slowly", got)
	}
	if got := o.spinLead(0, 300_000); got != initialLate+leadMargin {
		t.Errorf("another class's lead %d: classes must learn apart", got)
	}
	for range 400 {
		o.learnLateness(3, 0)
	}
	if got := o.spinLead(3, d); got != minLead {
		t.Errorf("lead after prompt wake-ups %d, want the floor %d", got, minLead)
	}
	for range 40 {
		o.learnLateness(3, 5_000_000)
	}
	if got := o.spinLead(3, d); got != maxLead {
		t.Errorf("lead after very late wake-ups %d, want the cap %d", got, maxLead)
	}
	if got := o.spinLead(3, 400_000); got != 100_000 {
		t.Errorf("lead for a 400 µs wait %d, want a quarter of it", got)
	}
	fixed := &pacer{spin: 30_000}
	if got := fixed.spinLead(3, d); got != 30_000 {
		t.Errorf("fixed lead %d, want 30000", got)
	}
}

// plan splits each wait as wait's comment says: short waits spun through
// when the packet is alone or packets are far apart, batched otherwise;
// every other wait for a packet, lone or one of a run 120 µs apart (a
// 100 Mbit/s link), sleeps up to a lead and spins the rest, the learnt
// lead under a quarter of the wait; snapshots and spinOff get no lead.
func TestPlan(t *testing.T) {
	auto := &pacer{spin: spinAuto, lastTx: 120_000} // 1500 B at 100 Mbit/s
	fast := &pacer{spin: spinAuto, lastTx: 12_000}  // 1500 B at 1 Gbit/s
	off := &pacer{spin: spinOff, lastTx: 120_000}
	fixed := &pacer{spin: 100_000, lastTx: 120_000}
	for _, tt := range []struct {
		name        string
		o           *pacer
		d           int64
		lone, stats bool
		sleep, lead int64
	}{
		{"deadline passed", auto, 0, false, false, 0, 0},
		{"short, far apart: spin", auto, 20_000, false, false, 0, 0},
		{"short, alone: spin", fast, 20_000, true, false, 0, 0},
		{"short, close together: batch", fast, 20_000, false, false, batchSleep, 0},
		{"short, spin off: batch", off, 20_000, true, false, batchSleep, 0},
		{"100 Mbit/s gap: a quarter", auto, 120_000, false, false, 90_000, 30_000},
		{"cut short by an arrival", auto, 40_000, false, false, 30_000, 10_000},
		{"lone 10 ms: the initial guess", auto, 10_000_000, true, false, 10_000_000 - initialLate - leadMargin, initialLate + leadMargin},
		{"snapshot: no lead", auto, 120_000, false, true, 120_000, 0},
		{"spin off: no lead", off, 120_000, false, false, 120_000, 0},
		{"fixed lead", fixed, 1_000_000, false, false, 900_000, 100_000},
		{"fixed lead over the wait: spin it all", fixed, 60_000, false, false, 0, 60_000},
	} {
		sleep, lead := tt.o.plan(tt.d, tt.lone, tt.stats)
		if sleep != tt.sleep || lead != tt.lead {
			t.Errorf("%s: plan(%d) = sleep %d, lead %d; want %d, %d", tt.name, tt.d, sleep, lead, tt.sleep, tt.lead)
		}
	}
}

// The batch rule holds a batch write for the next pass only through a
// coalescing device, on a fast link, while both now and the next pass
// come before flushBy; a pass due at flushBy or later writes it.
func TestHoldWrite(t *testing.T) {
	const by = 1_000_000
	fast := pacer{coalesces: true, lastTx: 12_000, flushBy: by} // 1500 B at 1 Gbit/s
	slow := fast
	slow.lastTx = 120_000 // 1500 B at 100 Mbit/s
	plain := fast
	plain.coalesces = false
	for _, tt := range []struct {
		name      string
		p         pacer
		now, next int64
		want      bool
	}{
		{"next pass before the deadline", fast, by - 50_000, by - 10_000, true},
		{"next pass at the deadline", fast, by - 50_000, by, false},
		{"next pass after it", fast, by - 50_000, by + 1, false},
		{"deadline passed", fast, by, by + 10_000, false},
		{"a sleep would pass it (run: now+minSleep)", fast, by - minSleep, by, false},
		{"a sleep ends before it", fast, by - minSleep - 1, by - 1, true},
		{"slow link", slow, by - 50_000, by - 10_000, false},
		{"plain device", plain, by - 50_000, by - 10_000, false},
	} {
		if got := tt.p.holdWrite(tt.now, tt.next); got != tt.want {
			t.Errorf("%s: holdWrite(%d, %d) = %v, want %v", tt.name, tt.now, tt.next, got, tt.want)
		}
	}
}

// A sleep with packets held for a batch ends by their flushBy, but is at
// least 1 µs; with none held, a short wait on a fast link sleeps the
// whole batchSleep.
func TestSleepForHeldBatch(t *testing.T) {
	p := pacer{spin: spinAuto, coalesces: true, lastTx: 12_000, flushBy: 1_040_000}
	for _, tt := range []struct {
		name             string
		now, deadline    int64
		held             bool
		wantSleep, wantL int64
	}{
		{"none held: batchSleep", 1_000_000, 1_020_000, false, batchSleep, 0},
		{"held: up to flushBy", 1_000_000, 1_020_000, true, 40_000, 0},
		{"held, flushBy passed: 1 µs", 1_050_000, 1_060_000, true, 1_000, 0},
	} {
		sleep, lead := p.sleepFor(tt.now, tt.deadline, false, false, tt.held)
		if sleep != tt.wantSleep || lead != tt.wantL {
			t.Errorf("%s: sleep %d, lead %d; want %d, %d", tt.name, sleep, lead, tt.wantSleep, tt.wantL)
		}
	}
}
