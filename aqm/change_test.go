package aqm

import (
	"math/rand/v2"
	"testing"
)

// Shrinking the limit drops from the C-queue head first, then the L-queue,
// and reports each dropped packet.
func TestChangeShrinksLimit(t *testing.T) {
	q := newTestDualPI2(t, nil)
	for i := range 5 {
		m := pkt(ECT0, 100)
		m.Slot = int32(i) // C: 0..4
		mustEnqueue(t, q, m, 0)
		m = pkt(ECT1, 200)
		m.Slot = int32(10 + i) // L: 10..14
		mustEnqueue(t, q, m, 0)
	}
	cfg := q.Config()
	cfg.Limit = 3
	var dropped []int32
	if err := q.Change(cfg, 0, func(m Meta) { dropped = append(dropped, m.Slot) }); err != nil {
		t.Fatal(err)
	}
	want := []int32{0, 1, 2, 3, 4, 10, 11}
	if len(dropped) != len(want) {
		t.Fatalf("dropped %v, want %v", dropped, want)
	}
	for i := range want {
		if dropped[i] != want[i] {
			t.Fatalf("dropped %v, want %v", dropped, want)
		}
	}
	s := q.Stats(0)
	if s.BacklogPkts != 3 || s.DropsBy[ReasonLimit] != 7 || s.C.Dropped != 5 || s.L.Dropped != 2 || s.Overlimits != 0 {
		t.Errorf("after change: %+v", s)
	}
	checkInvariants(t, q)

	// A smaller memlimit drops too; nil callback is allowed.
	cfg.MemLimit = 250
	if err := q.Change(cfg, 0, nil); err != nil {
		t.Fatal(err)
	}
	if pkts, bytes := q.Len(); pkts != 1 || bytes != 200 {
		t.Errorf("after memlimit 250: %d packets, %d bytes", pkts, bytes)
	}
	checkInvariants(t, q)
}

// Change validates first and changes nothing on error; updates due before
// now run under the old configuration; new gains apply afterwards.
func TestChangeLive(t *testing.T) {
	q := newTestDualPI2(t, nil)
	mustEnqueue(t, q, pkt(ECT1, 1500), 0)
	bad := q.Config()
	bad.Coupling = 0
	if err := q.Change(bad, 16*ms, nil); err == nil {
		t.Fatal("Change accepted coupling 0")
	}
	if q.Config().Coupling != 2 || q.prob != 0 {
		t.Fatal("a rejected Change had effects")
	}
	cfg := q.Config()
	cfg.Tupdate = 8 * ms
	cfg.ClassicProtection = 50
	if err := q.Change(cfg, 16*ms, nil); err != nil {
		t.Fatal(err)
	}
	if q.prob != 220_437_500 { // the 16 ms update ran with the old config
		t.Errorf("p = %d after the update due at the change", q.prob)
	}
	if q.NextUpdate() != 32*ms {
		t.Errorf("next update %d: the pending one keeps its time", q.NextUpdate())
	}
	q.Advance(32 * ms)
	if q.NextUpdate() != 40*ms {
		t.Errorf("next update %d: later ones follow the new tupdate", q.NextUpdate())
	}
	if s := q.Stats(32 * ms); s.Credit != 0 {
		t.Errorf("credit %d: new weights restart it at MTU·(50−50)", s.Credit)
	}
}

// Reset empties the queues and clears p' and the xstats, keeping the
// configuration and last_qdelay.
func TestReset(t *testing.T) {
	q := newTestDualPI2(t, func(c *Config) { c.ClassicProtection = 30 })
	for range 3 {
		mustEnqueue(t, q, pkt(ECT1, 1500), 0)
		mustEnqueue(t, q, pkt(ECT0, 1500), 0)
	}
	q.Advance(32 * ms)
	mustDequeue(t, q, 32*ms) // step-marked: ecn_mark, step_marks
	if q.prob == 0 || q.lastQdelay != 32*ms {
		t.Fatalf("setup: p %d last %d", q.prob, q.lastQdelay)
	}
	var released int
	q.ResetAndRelease(func(Meta) { released++ })
	s := q.Stats(32 * ms)
	if released != 5 || s.BacklogPkts != 0 || s.MemoryUsed != 0 || s.MaxMemoryUsed != 0 {
		t.Errorf("released %d, backlog %d, memory %d/%d", released, s.BacklogPkts, s.MemoryUsed, s.MaxMemoryUsed)
	}
	if s.Prob != 0 || s.PktsInC != 0 || s.PktsInL != 0 || s.MaxQ != 0 || s.ECNMark != 0 || s.StepMarks != 0 {
		t.Errorf("xstats not cleared: %+v", s)
	}
	if s.Credit != 1500*(30-70) {
		t.Errorf("credit %d, want the initial value", s.Credit)
	}
	if q.lastQdelay != 32*ms || q.Config().ClassicProtection != 30 || q.NextUpdate() != 48*ms {
		t.Errorf("reset lost last_qdelay %d, config or schedule", q.lastQdelay)
	}
	if s.SentPackets != 1 {
		t.Errorf("generic counters cleared: sent %d", s.SentPackets)
	}
	// The kept last_qdelay makes the next update see the delay fall to 0.
	q.Advance(48 * ms)
	if q.prob != 0 {
		t.Errorf("p = %d after reset and an idle update", q.prob)
	}
	checkInvariants(t, q)
	q.Reset()
	checkInvariants(t, q)
}

// A randomized run: after every operation the invariants hold, and every
// packet accepted is accounted for exactly once (sent, dropped, or queued).
func TestRandomizedInvariants(t *testing.T) {
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 99))
		q := newTestDualPI2(t, func(c *Config) {
			c.Limit = 40
			c.MemLimit = 30000
			c.DropOverload = seed%2 == 0
			c.DropEnqueue = seed == 3
			c.StepInPackets = seed == 1
			if c.StepInPackets {
				c.StepThresh = 5
			}
			c.MinQlenStep = uint32(seed)
		})
		var now int64
		var accepted, refused, released uint64
		for op := range 5000 {
			now += rng.Int64N(2 * ms)
			q.Advance(now)
			switch r := rng.IntN(10); {
			case r < 5:
				m := Meta{ECN: ECN(rng.IntN(4)), Len: int32(40 + rng.IntN(1460)), Class: Class(rng.IntN(4))}
				if v := q.Enqueue(m, now); v.Action == Drop {
					refused++
				} else {
					accepted++
				}
			case r < 9:
				m, v, ok := q.Dequeue(now)
				if ok && v.Action == Drop {
					released++
				}
				if ok && v.Action == Mark && m.ECN == NotECT {
					t.Fatalf("seed %d op %d: Not-ECT packet marked (%v)", seed, op, v.Reason)
				}
			default:
				if op%50 == 0 {
					cfg := q.Config()
					cfg.Limit = uint32(10 + rng.IntN(40))
					cfg.ClassicProtection = uint8(rng.IntN(101))
					_ = q.Change(cfg, now, func(Meta) { released++ })
				}
			}
			checkInvariants(t, q)
			s := q.Stats(now)
			if s.C.Enqueued+s.L.Enqueued != accepted {
				t.Fatalf("seed %d op %d: enqueued %d, accepted %d", seed, op, s.C.Enqueued+s.L.Enqueued, accepted)
			}
			if got := s.SentPackets + released + uint64(s.BacklogPkts); got != accepted {
				t.Fatalf("seed %d op %d: sent+dropped+queued %d, accepted %d", seed, op, got, accepted)
			}
			if s.Dropped != refused+released {
				t.Fatalf("seed %d op %d: dropped %d, want %d", seed, op, s.Dropped, refused+released)
			}
		}
	}
}
