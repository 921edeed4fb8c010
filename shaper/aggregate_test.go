package shaper

import (
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
)

func mustMeta(n int32) aqm.Meta { return aqm.Meta{Len: n} }

// Wi-Fi-like bursts: a 100 Mb/s link that may start sending only every
// 4 ms, at most 6000 B per burst, fed 1000-byte packets at 20 Mb/s (one
// per 400 µs). Each burst starts on the 4 ms grid and sends back to back
// (each packet leaves the queue as the previous leaves the link); once
// backlogged every burst is six packets (the sixth uses up the budget),
// so the link delivers 6000 B / 4 ms = 12 Mb/s and the queue grows.
func TestAggregateBursts(t *testing.T) {
	l := newTestLink(t, Config{Rate: Const{BitsPerSecond: 100_000_000},
		Aggregate: Aggregate{Interval: 4 * ms, Bytes: 6000}}, newFakeQueue())
	var arr []arrival
	for i := range 2500 { // 1 s
		arr = append(arr, arrival{at: int64(i) * 400_000, len: 1000})
	}
	evs := drive(t, l, arr, nil)
	if len(evs) != len(arr) {
		t.Fatalf("%d events for %d packets", len(evs), len(arr))
	}
	bursts := map[int64]int{}
	var start int64
	for i, e := range evs {
		if i == 0 || e.Deq != evs[i-1].Dep {
			start = e.Deq
			if start%(4*ms) != 0 {
				t.Fatalf("packet %d starts a burst at %d, not on the 4 ms grid", i, start)
			}
		}
		bursts[start]++
		if wire := e.Dep - e.Deq; wire != 80_000 {
			t.Fatalf("packet %d: %d ns on the wire, want 80 µs at 100 Mb/s", i, wire)
		}
	}
	for s, n := range bursts {
		if n > 6 {
			t.Errorf("burst at %d sent %d packets, want at most 6", s, n)
		}
		if s >= 100*ms && s < 1000*ms && n != 6 {
			t.Errorf("backlogged burst at %d sent %d packets, want 6", s, n)
		}
	}
	// 1 s of arrivals at 20 Mb/s drains at 12 Mb/s: the last leaves at
	// 2.5 MB / (6000 B per 4 ms) ≈ 1.664 s.
	if last := evs[len(evs)-1].Deq; last < 1660*ms || last > 1670*ms {
		t.Errorf("last packet left the queue at %v ms, want about 1664 ms", last/ms)
	}
}

// A packet arriving between slots waits in the queue for the next one;
// switching aggregation off lets it go at once.
func TestAggregateWaitAndLiveOff(t *testing.T) {
	l := newTestLink(t, Config{Rate: Const{BitsPerSecond: 100_000_000},
		Aggregate: Aggregate{Interval: 4 * ms, Bytes: 6000}}, newFakeQueue())
	evs := drive(t, l, []arrival{{at: ms, len: 1000}, {at: 9 * ms, len: 1000}}, nil)
	if evs[0].Deq != 4*ms || evs[1].Deq != 12*ms {
		t.Errorf("dequeues at %d and %d, want the next slots 4 ms and 12 ms", evs[0].Deq, evs[1].Deq)
	}

	l = newTestLink(t, Config{Rate: Const{BitsPerSecond: 100_000_000},
		Aggregate: Aggregate{Interval: 4 * ms, Bytes: 6000}}, newFakeQueue())
	l.Enqueue(mustMeta(1000), ms)
	if l.Next() != 4*ms {
		t.Fatalf("Next %d, want the slot at 4 ms", l.Next())
	}
	if err := l.SetAggregate(Aggregate{}, 2*ms); err != nil {
		t.Fatal(err)
	}
	out := l.Poll(2*ms+80_000, nil)
	if len(out) != 1 || out[0].Deq != 2*ms {
		t.Errorf("after switching off at 2 ms: events %+v, want the packet sent at 2 ms", out)
	}
	for _, bad := range []Aggregate{{Interval: ms}, {Bytes: 10}, {Interval: -1, Bytes: 10}} {
		if err := l.SetAggregate(bad, 3*ms); err == nil {
			t.Errorf("SetAggregate(%+v) accepted", bad)
		}
	}
}
