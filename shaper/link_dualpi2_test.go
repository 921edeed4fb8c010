package shaper

import (
	"math/rand/v2"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
)

func newDualPI2(t testing.TB) *aqm.DualPI2 {
	t.Helper()
	q, err := aqm.NewDualPI2(aqm.DefaultConfig(), rand.New(rand.NewPCG(2, 0x5eed)))
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// The link drives a real DualPI2: PI updates every tupdate in time order
// with the dequeues, probabilities recorded at dequeue, and the link's
// counters agreeing with the queue's.
func TestLinkWithDualPI2(t *testing.T) {
	q := newDualPI2(t)
	cfg := q.Config()
	l := newTestLink(t, Config{Rate: Const{10e6}, Delay: 10 * ms}, q)
	var updates []int64
	l.OnUpdate(func(at int64) { updates = append(updates, at) })

	// An L4S flow at 6 Mbit/s and a classic one at 6 Mbit/s into 10 Mbit/s.
	var arrivals []arrival
	for i := range 1000 {
		at := int64(i) * 2 * ms
		arrivals = append(arrivals, arrival{at, 1500, aqm.ECT1}, arrival{at + ms, 1500, aqm.NotECT})
	}
	events := drive(t, l, arrivals, nil)

	for i, at := range updates {
		if at != int64(i+1)*cfg.Tupdate {
			t.Fatalf("update %d at %d; want %d (every tupdate from tupdate)", i, at, int64(i+1)*cfg.Tupdate)
		}
	}
	if len(updates) < 100 {
		t.Fatalf("%d PI updates in 2 s; want 125", len(updates))
	}
	var marked, dropped, probSeen int
	for _, e := range events {
		if e.Sojourn() < 0 || e.Deq < e.Meta.Arrival {
			t.Fatalf("negative sojourn: %+v", e)
		}
		if e.Verdict.Action == aqm.Mark {
			marked++
			if e.Meta.Class == aqm.Classic {
				t.Fatalf("Not-ECT packet marked: %+v", e)
			}
		}
		if e.Verdict.Action == aqm.Drop {
			dropped++
		}
		if e.Prob > 0 {
			probSeen++
		}
	}
	if marked == 0 || dropped == 0 || probSeen == 0 {
		t.Errorf("overload produced %d marks, %d drops, %d events with p' > 0; want some of each", marked, dropped, probSeen)
	}

	s, qs := l.Stats(), q.Stats(updates[len(updates)-1])
	if s.Enqueued != qs.C.Enqueued+qs.L.Enqueued || s.Refused+s.Dropped != qs.Dropped || s.Sent != qs.SentPackets {
		t.Errorf("link %+v disagrees with queue: enqueued C %d L %d, dropped %d, sent %d",
			s, qs.C.Enqueued, qs.L.Enqueued, qs.Dropped, qs.SentPackets)
	}
	if s.Enqueued+s.Refused != uint64(len(arrivals)) || s.Delivered+s.Dropped != s.Enqueued {
		t.Errorf("counters do not balance: %+v for %d arrivals", s, len(arrivals))
	}
}
