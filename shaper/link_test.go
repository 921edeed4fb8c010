package shaper

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
)

const ms = int64(1_000_000)

type arrival struct {
	at  int64
	len int32
	ecn aqm.ECN
}

func newTestLink(t testing.TB, cfg Config, q aqm.Queue) *Link {
	t.Helper()
	l, err := NewLink(cfg, q, rand.New(rand.NewPCG(1, 0x5eed)))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// drive offers each arrival after polling at its time (Meta.Slot = index),
// polls at the extra times too, drains the link and returns every event.
// It checks that events come out in At order, none later than the Poll
// that returned it.
func drive(t testing.TB, l *Link, arrivals []arrival, polls []int64) []Event {
	t.Helper()
	var all []Event
	poll := func(now int64) {
		n := len(all)
		all = l.Poll(now, all)
		for i := n; i < len(all); i++ {
			if all[i].At > now {
				t.Fatalf("Poll(%d) returned an event at %d", now, all[i].At)
			}
			if i > 0 && all[i].At < all[i-1].At {
				t.Fatalf("events out of At order: %d after %d", all[i].At, all[i-1].At)
			}
		}
	}
	p := 0
	for i, a := range arrivals {
		for p < len(polls) && polls[p] < a.at {
			poll(polls[p])
			p++
		}
		poll(a.at)
		l.Enqueue(aqm.Meta{Len: a.len, Slot: int32(i), ECN: a.ecn}, a.at)
	}
	for ; p < len(polls); p++ {
		poll(polls[p])
	}
	drain(l, poll)
	return all
}

// drain polls at each Next until no packet is pending (a queue with
// periodic updates always has a Next, so Poll(Never) would not return).
func drain(l *Link, poll func(now int64)) {
	for l.Pending() > 0 {
		poll(l.Next())
	}
}

func TestLinkTiming(t *testing.T) {
	type want struct{ slot, deq, dep, at int64 }
	full := func(times ...int64) []arrival {
		var a []arrival
		for _, at := range times {
			a = append(a, arrival{at: at, len: 1500})
		}
		return a
	}
	tests := []struct {
		name     string
		bps      uint64
		delay    int64
		arrivals []arrival
		want     []want
	}{
		{"idle link starts at the arrival", 10e6, 10 * ms, full(ms),
			[]want{{0, ms, ms + 1_200_000, 11*ms + 1_200_000}}},
		{"back to back", 10e6, 10 * ms, full(0, 0, 0),
			[]want{{0, 0, 1_200_000, 11_200_000}, {1, 1_200_000, 2_400_000, 12_400_000}, {2, 2_400_000, 3_600_000, 13_600_000}}},
		{"arrival while busy waits for the link", 10e6, 0, full(0, ms/2),
			[]want{{0, 0, 1_200_000, 1_200_000}, {1, 1_200_000, 2_400_000, 2_400_000}}},
		{"idle gap", 10e6, ms, full(0, 5*ms),
			[]want{{0, 0, 1_200_000, 2_200_000}, {1, 5 * ms, 6_200_000, 7_200_000}}},
		{"ceil per packet, not per burst", 3e6, 0, []arrival{{0, 1, 0}, {0, 1, 0}},
			[]want{{0, 0, 2667, 2667}, {1, 2667, 5334, 5334}}},
		{"mixed sizes", 1e9, 100, []arrival{{0, 40, 0}, {0, 1500, 0}, {0, 576, 0}},
			[]want{{0, 0, 320, 420}, {1, 320, 12_320, 12_420}, {2, 12_320, 16_928, 17_028}}},
		{"zero-length packet takes no time", 1e6, 0, []arrival{{5, 0, 0}, {5, 1, 0}},
			[]want{{0, 5, 5, 5}, {1, 5, 8005, 8005}}},
	}
	for _, tt := range tests {
		l := newTestLink(t, Config{Rate: Const{tt.bps}, Delay: tt.delay}, newFakeQueue())
		events := drive(t, l, tt.arrivals, nil)
		var got []want
		for _, e := range events {
			got = append(got, want{int64(e.Meta.Slot), e.Deq, e.Dep, e.At})
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got (slot, deq, dep, at) %v\nwant %v", tt.name, got, tt.want)
		}
	}
}

// randomArrivals is a bursty workload around the link rate.
func randomArrivals(rng *rand.Rand, n int) []arrival {
	var a []arrival
	now := int64(0)
	for range n {
		now += rng.Int64N(2 * ms)
		for range 1 + rng.IntN(4) {
			a = append(a, arrival{at: now, len: int32(40 + rng.IntN(1461)), ecn: aqm.ECN(rng.IntN(4))})
		}
	}
	return a
}

// A late Poll must give exactly the events of a punctual driver: the
// schedule is absolute, so lateness never becomes rate error.
func TestLinkLatePoll(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	arrivals := randomArrivals(rng, 300)
	cfg := Config{Rate: Const{8e6}, Delay: 3 * ms}
	newQ := func() *fakeQueue { q := newFakeQueue(); q.period = 700_000; q.dropEvery = 7; return q }

	// Punctual: poll at every Next() before each arrival.
	l := newTestLink(t, cfg, newQ())
	var punctual []Event
	for i, a := range arrivals {
		for next := l.Next(); next <= a.at; next = l.Next() {
			punctual = l.Poll(next, punctual)
		}
		punctual = l.Poll(a.at, punctual)
		l.Enqueue(aqm.Meta{Len: a.len, Slot: int32(i), ECN: a.ecn}, a.at)
	}
	drain(l, func(now int64) { punctual = l.Poll(now, punctual) })

	// Late: only at arrivals, and at odd times in between.
	var polls []int64
	for range 50 {
		polls = append(polls, rng.Int64N(arrivals[len(arrivals)-1].at))
	}
	slices.Sort(polls)
	late := drive(t, newTestLink(t, cfg, newQ()), arrivals, polls)
	if !reflect.DeepEqual(late, punctual) {
		t.Fatalf("late polling changed the events (%d vs %d events)", len(late), len(punctual))
	}

	// Three packets at 0, first poll at 10 ms: dequeues at 0, 1.5, 3 ms.
	l = newTestLink(t, cfg, newFakeQueue())
	for i := range 3 {
		l.Enqueue(aqm.Meta{Len: 1500, Slot: int32(i)}, 0)
	}
	got := l.Poll(10*ms, nil)
	for i, e := range got {
		if e.Deq != int64(i)*1_500_000 || e.Dep != int64(i+1)*1_500_000 {
			t.Errorf("packet %d: deq %d dep %d; want %d, %d", i, e.Deq, e.Dep, int64(i)*1_500_000, int64(i+1)*1_500_000)
		}
	}
}

func TestLinkEventFields(t *testing.T) {
	q := newFakeQueue()
	q.period = ms // Prob = number of updates so far
	l := newTestLink(t, Config{Rate: Const{10e6}, Delay: 5 * ms}, q)
	arrivals := []arrival{{100, 1500, aqm.ECT1}, {200, 1500, aqm.ECT0}, {300, 1500, aqm.NotECT}}
	events := drive(t, l, arrivals, nil)
	type fields struct {
		slot             int32
		arrival, sojourn int64
		action           aqm.Action
		deq, dep, at     int64
		prob             uint32
	}
	var got []fields
	for _, e := range events {
		got = append(got, fields{e.Meta.Slot, e.Meta.Arrival, e.Sojourn(), e.Verdict.Action, e.Deq, e.Dep, e.At, e.Prob})
	}
	want := []fields{
		// Updates at 0 (first Poll at 100), 1 ms, 2 ms: Prob counts those before each dequeue.
		{0, 100, 0, aqm.Pass, 100, 1_200_100, 6_200_100, 1},
		{1, 200, 1_199_900, aqm.Mark, 1_200_100, 2_400_100, 7_400_100, 2},
		{2, 300, 2_399_800, aqm.Pass, 2_400_100, 3_600_100, 8_600_100, 3},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events:\n got %+v\nwant %+v", got, want)
	}
	if got := events[0].Meta.ECN; got != aqm.ECT1 {
		t.Errorf("Meta.ECN = %v; want ECT(1) as queued", got)
	}
}

// At equal times the periodic update runs before the dequeue, and an
// Enqueue (after the caller's Poll) comes after both.
func TestLinkSameTimeOrder(t *testing.T) {
	q := newFakeQueue()
	q.period = 1_200_000 // updates at 0, 1.2 ms, 2.4 ms: when each packet finishes
	q.logging = true
	l := newTestLink(t, Config{Rate: Const{10e6}}, q)
	var updates []int64
	l.OnUpdate(func(at int64) { updates = append(updates, at) })
	drive(t, l, []arrival{{0, 1500, 0}, {0, 1500, 0}, {2_400_000, 1500, 0}}, nil)
	want := "adv@0 enq@0 deq@0 enq@0 adv@1200000 deq@1200000 adv@2400000 enq@2400000 deq@2400000 adv@3600000"
	if got := strings.Join(q.log, " "); got != want {
		t.Errorf("operations:\n got %s\nwant %s", got, want)
	}
	if !reflect.DeepEqual(updates, []int64{0, 1_200_000, 2_400_000, 3_600_000}) {
		t.Errorf("OnUpdate times = %v", updates)
	}
}

// The delay line is FIFO: lowering the delay never lets a packet overtake
// one that left the link earlier; each is released at
// max(dep + the delay in force at dep, the previous release).
func TestLinkDelayChangesNeverReorder(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	l := newTestLink(t, Config{Rate: Const{20e6}, Delay: 20 * ms}, newFakeQueue())
	type change struct{ at, delay int64 }
	changes := []change{{-1, 20 * ms}}
	var events []Event
	now := int64(0)
	const n = 3000
	for i := range n {
		now += rng.Int64N(ms)
		events = l.Poll(now, events)
		if rng.IntN(30) == 0 {
			d := rng.Int64N(40 * ms) // up and down, often a big drop
			l.SetDelay(d)
			changes = append(changes, change{now, d})
		}
		l.Enqueue(aqm.Meta{Len: int32(64 + rng.IntN(1437)), Slot: int32(i)}, now)
	}
	drain(l, func(t int64) { events = l.Poll(t, events) })
	if len(events) != n {
		t.Fatalf("%d events; want %d", len(events), n)
	}
	decreases := 0
	for i := 1; i < len(changes); i++ {
		if changes[i].delay < changes[i-1].delay {
			decreases++
		}
	}
	if decreases < 10 {
		t.Fatalf("only %d delay decreases: the test does not exercise reordering", decreases)
	}
	held := 0 // releases held back behind an earlier packet
	prev := int64(0)
	for i, e := range events {
		if e.Meta.Slot != int32(i) {
			t.Fatalf("release %d is slot %d: reordered", i, e.Meta.Slot)
		}
		// The delay set at c.at applies to departures after c.at (Poll(c.at)
		// had already handled those at c.at).
		c := changes[0]
		for _, x := range changes {
			if x.at < e.Dep {
				c = x
			}
		}
		want := max(e.Dep+c.delay, prev)
		if e.At != want {
			t.Fatalf("slot %d: dep %d delay %d released at %d; want %d", i, e.Dep, c.delay, e.At, want)
		}
		if want > e.Dep+c.delay {
			held++
		}
		prev = e.At
	}
	if held == 0 {
		t.Error("no release was held back: the test does not exercise the FIFO rule")
	}
}

// Dequeue-time drops come out as events at their dequeue time, also when
// an idle link pulls the packet during Enqueue.
func TestLinkDequeueDrops(t *testing.T) {
	tests := []struct {
		name      string
		dropEvery int
		arrivals  []arrival
		want      []string // slot:action@At deq dep
	}{
		{"every 2nd while busy", 2, []arrival{{0, 1500, 0}, {0, 1500, 0}, {0, 1500, 0}, {0, 1500, 0}},
			[]string{"1:dropped@1200000 deq=1200000 dep=0", "0:sent@2200000 deq=0 dep=1200000",
				"3:dropped@2400000 deq=2400000 dep=0", "2:sent@3400000 deq=1200000 dep=2400000"}},
		{"idle link drops at enqueue time", 1, []arrival{{5, 1500, 0}, {7 * ms, 100, 0}},
			[]string{"0:dropped@5 deq=5 dep=0", "1:dropped@7000000 deq=7000000 dep=0"}},
	}
	for _, tt := range tests {
		q := newFakeQueue()
		q.dropEvery = tt.dropEvery
		l := newTestLink(t, Config{Rate: Const{10e6}, Delay: ms}, q)
		events := drive(t, l, tt.arrivals, nil)
		var got []string
		for _, e := range events {
			got = append(got, fmtEvent(e))
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
		if s := l.Stats(); s.Dropped != uint64(len(tt.want)-countSent(events)) {
			t.Errorf("%s: Stats.Dropped = %d", tt.name, s.Dropped)
		}
	}
}

func fmtEvent(e Event) string {
	return fmt.Sprintf("%d:%v@%d deq=%d dep=%d", e.Meta.Slot, e.Verdict.Action, e.At, e.Deq, e.Dep)
}

func countSent(events []Event) int {
	n := 0
	for _, e := range events {
		if e.Verdict.Action != aqm.Drop {
			n++
		}
	}
	return n
}

// Next announces the drop Enqueue left for Poll, so a driver polls at once.
func TestLinkNextAnnouncesEnqueueDrop(t *testing.T) {
	q := newFakeQueue()
	q.dropEvery = 1
	l := newTestLink(t, Config{Rate: Const{10e6}}, q)
	if got := l.Next(); got != Never {
		t.Fatalf("idle Next() = %d; want Never", got)
	}
	l.Poll(3*ms, nil)
	l.Enqueue(aqm.Meta{Len: 100}, 3*ms)
	if got, p := l.Next(), l.Pending(); got != 3*ms || p != 1 {
		t.Fatalf("Next() = %d, Pending() = %d; want 3 ms, 1", got, p)
	}
	if got := l.Poll(3*ms, nil); len(got) != 1 || got[0].Verdict.Action != aqm.Drop {
		t.Fatalf("Poll = %v; want the drop", got)
	}
	if got, p := l.Next(), l.Pending(); got != Never || p != 0 {
		t.Errorf("after Poll: Next() = %d, Pending() = %d; want Never, 0", got, p)
	}
}

// NextRelease is the next release from the delay line, or for a packet on
// the wire its end plus the delay; queued packets do not count.
func TestLinkNextRelease(t *testing.T) {
	l := newTestLink(t, Config{Rate: Const{1e9}, Delay: 5 * ms}, newFakeQueue()) // 1500 B: 12 µs
	if got := l.NextRelease(); got != Never {
		t.Fatalf("idle: NextRelease() = %d; want Never", got)
	}
	l.Poll(0, nil)
	l.Enqueue(aqm.Meta{Len: 1500}, 0)
	l.Enqueue(aqm.Meta{Len: 1500}, 0)
	if got := l.NextRelease(); got != 12_000+5*ms {
		t.Errorf("first on the wire: NextRelease() = %d; want %d", got, 12_000+5*ms)
	}
	l.Poll(12_000, nil) // the first in the delay line, the second on the wire
	if got := l.NextRelease(); got != 12_000+5*ms {
		t.Errorf("first in the line: NextRelease() = %d; want %d", got, 12_000+5*ms)
	}
	if got := l.Poll(12_000+5*ms, nil); len(got) != 1 {
		t.Fatalf("Poll at the first release = %d events; want 1", len(got))
	}
	if got := l.NextRelease(); got != 24_000+5*ms {
		t.Errorf("second in the line: NextRelease() = %d; want %d", got, 24_000+5*ms)
	}
	l.Poll(24_000+5*ms, nil)
	if got := l.NextRelease(); got != Never {
		t.Errorf("all released: NextRelease() = %d; want Never", got)
	}
}

func TestLinkLoss(t *testing.T) {
	l := newTestLink(t, Config{Rate: Const{1e9}, Delay: 5 * ms, Loss: IID{P: 1}}, newFakeQueue())
	events := drive(t, l, []arrival{{0, 1500, aqm.ECT0}, {0, 1500, 0}}, nil)
	want := []string{"0:dropped@12000 deq=0 dep=12000", "1:dropped@24000 deq=12000 dep=24000"}
	var got []string
	for _, e := range events {
		got = append(got, fmtEvent(e))
		if e.Verdict.Reason != aqm.ReasonLoss {
			t.Errorf("reason %v; want loss", e.Verdict.Reason)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	s := l.Stats()
	if s.Lost != 2 || s.LostBytes != 3000 || s.Sent != 2 || s.Delivered != 0 {
		t.Errorf("stats %+v", s)
	}

	// IID 10 %: about a tenth lost, the rest delivered, all accounted for.
	l = newTestLink(t, Config{Rate: Const{1e9}, Loss: IID{P: 0.1}}, newFakeQueue())
	var arrivals []arrival
	for i := range 20000 {
		arrivals = append(arrivals, arrival{int64(i) * 20_000, 1000, 0})
	}
	drive(t, l, arrivals, nil)
	s = l.Stats()
	if s.Lost < 1800 || s.Lost > 2200 || s.Lost+s.Delivered != 20000 {
		t.Errorf("10%% loss: lost %d delivered %d of 20000", s.Lost, s.Delivered)
	}
	l.SetLoss(nil)
	drive(t, l, []arrival{{1 << 40, 1000, 0}}, nil)
	if l.Stats().Delivered != s.Delivered+1 {
		t.Error("SetLoss(nil) still loses")
	}
}

// Every accepted packet is always in exactly one place, whatever happens:
// refusals, dequeue drops, loss, and live rate and delay changes.
func TestLinkCountersBalance(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	q := newFakeQueue()
	q.limit, q.dropEvery = 20, 5
	l := newTestLink(t, Config{Rate: Const{10e6}, Delay: 4 * ms, Loss: IID{P: 0.05}}, q)
	var out []Event
	var offered, delivered, delivBytes, lost, dropped uint64
	check := func(when string) {
		t.Helper()
		s := l.Stats()
		if s.Enqueued+s.Refused != offered {
			t.Fatalf("%s: enqueued %d + refused %d != offered %d", when, s.Enqueued, s.Refused, offered)
		}
		if s.Enqueued != s.Delivered+s.Lost+s.Dropped+uint64(l.Pending()) {
			t.Fatalf("%s: enqueued %d != delivered %d + lost %d + dropped %d + pending %d",
				when, s.Enqueued, s.Delivered, s.Lost, s.Dropped, l.Pending())
		}
		if s.Sent != s.Delivered+s.Lost+uint64(s.InDelayLine) {
			t.Fatalf("%s: sent %d != delivered %d + lost %d + in delay line %d", when, s.Sent, s.Delivered, s.Lost, s.InDelayLine)
		}
		if s.Delivered != delivered || s.DeliveredBytes != delivBytes || s.Lost != lost || s.Dropped != dropped {
			t.Fatalf("%s: stats %+v disagree with the events (%d delivered, %d B, %d lost, %d dropped)",
				when, s, delivered, delivBytes, lost, dropped)
		}
	}
	now := int64(0)
	for i := range 20000 {
		now += rng.Int64N(1_500_000)
		out = l.Poll(now, out[:0])
		for _, e := range out {
			switch {
			case e.Verdict.Reason == aqm.ReasonLoss:
				lost++
			case e.Verdict.Action == aqm.Drop:
				dropped++
			default:
				delivered++
				delivBytes += uint64(e.Meta.Len)
			}
		}
		check("after Poll")
		switch rng.IntN(200) {
		case 0:
			l.SetDelay(rng.Int64N(10 * ms))
		case 1:
			l.SetRate(Const{uint64(1e6 + rng.Int64N(20e6))}, now)
		}
		for range rng.IntN(3) {
			offered++
			l.Enqueue(aqm.Meta{Len: int32(40 + rng.IntN(1461)), Slot: int32(i)}, now)
			check("after Enqueue")
		}
	}
	if s := l.Stats(); s.Refused == 0 || s.Dropped == 0 || s.Lost == 0 || s.Delivered == 0 {
		t.Errorf("workload missed a path: %+v", s)
	}
}

func TestLinkSetRate(t *testing.T) {
	// The packet on the wire keeps its finish time; the next uses the new rate.
	l := newTestLink(t, Config{Rate: Const{10e6}}, newFakeQueue())
	l.Enqueue(aqm.Meta{Len: 1500, Slot: 0}, 0)
	l.Enqueue(aqm.Meta{Len: 1500, Slot: 1}, 0)
	l.Poll(600_000, nil)
	l.SetRate(Const{20e6}, 600_000)
	got := l.Poll(10*ms, nil)
	if len(got) != 2 || got[0].Dep != 1_200_000 || got[1].Deq != 1_200_000 || got[1].Dep != 1_800_000 {
		t.Errorf("after SetRate: %v", got)
	}

	// A zero rate holds the packet until a rate is set, then it starts over.
	l = newTestLink(t, Config{Rate: Const{0}}, newFakeQueue())
	l.Enqueue(aqm.Meta{Len: 1500}, 0)
	if n, p := l.Next(), l.Pending(); n != Never || p != 1 {
		t.Fatalf("zero rate: Next %d Pending %d; want Never, 1", n, p)
	}
	l.Poll(5*ms, nil)
	l.SetRate(Const{10e6}, 5*ms)
	if got := l.Poll(10*ms, nil); len(got) != 1 || got[0].Deq != 0 || got[0].Dep != 6_200_000 {
		t.Errorf("after a zero rate: %v", got)
	}
	if got := l.Stats().Busy; got != 6_200_000 {
		t.Errorf("Busy = %d; want 6.2 ms (the wait counts as on the wire)", got)
	}

	// A schedule set live starts at now.
	l.SetRate(traceOf(t, "1\n"), 20*ms)
	l.Poll(20*ms, nil)
	l.Enqueue(aqm.Meta{Len: 1500}, 20*ms)
	if got := l.Poll(30*ms, nil); len(got) != 1 || got[0].Dep != 21*ms+1500 {
		t.Errorf("trace set at 20 ms: %v", got)
	}
	if _, ok := l.Rate().(*Trace); !ok {
		t.Errorf("Rate() = %T", l.Rate())
	}
	l.SetRate(nil, 40*ms) // ignored
	if l.Rate() == nil {
		t.Error("SetRate(nil) cleared the rate")
	}
}

func TestLinkOrigin(t *testing.T) {
	l := newTestLink(t, Config{Rate: traceOf(t, "1\n"), Origin: 100 * ms}, newFakeQueue())
	l.Enqueue(aqm.Meta{Len: 1500}, 50*ms) // before the trace starts: waits for it
	l.Poll(101*ms, nil)
	l.Enqueue(aqm.Meta{Len: 1500}, 101*ms)
	got := l.Poll(200*ms, nil)
	if len(got) != 2 || got[0].Dep != 101*ms+1500 || got[1].Dep != 102*ms+1500 {
		t.Errorf("origin 100 ms: %v", got)
	}
}

func TestLinkSetDelayNegative(t *testing.T) {
	l := newTestLink(t, Config{Rate: Const{1e9}, Delay: ms}, newFakeQueue())
	l.SetDelay(-5)
	if l.Delay() != 0 {
		t.Errorf("Delay() = %d; want 0", l.Delay())
	}
}

func TestNewLinkErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	q := newFakeQueue()
	tests := []struct {
		cfg  Config
		q    aqm.Queue
		rng  *rand.Rand
		want string
	}{
		{Config{Rate: Const{1}}, nil, rng, "shaper: no queue"},
		{Config{}, q, rng, "shaper: no rate (want Const, a mahimahi trace or a rate schedule)"},
		{Config{Rate: Const{1}, Delay: -1}, q, rng, "shaper: delay -1ns is negative"},
		{Config{Rate: Const{1}}, q, nil, "shaper: no random source (loss models draw from it)"},
	}
	for _, tt := range tests {
		_, err := NewLink(tt.cfg, tt.q, tt.rng)
		if err == nil || err.Error() != tt.want {
			t.Errorf("NewLink(%+v) error = %v; want %q", tt.cfg, err, tt.want)
		}
	}
	if l, err := NewLink(Config{Rate: Const{1}}, q, rng); err != nil || l.Queue() != aqm.Queue(q) {
		t.Errorf("NewLink: %v, Queue() %v", err, l.Queue())
	}
}

// The delay line starts at the size a constant rate needs and grows when
// more packets are in flight.
func TestDelayLineGrows(t *testing.T) {
	if got := delayLineSize(Config{Rate: Const{1e9}, Delay: 100 * ms}); got != 2*8333+64 {
		t.Errorf("1 Gbit/s, 100 ms: size %d; want %d", got, 2*8333+64)
	}
	l := newTestLink(t, Config{Rate: Const{1e9}, Delay: 50 * ms}, newFakeQueue())
	size := len(l.line.buf)
	var arrivals []arrival
	for i := range 4 * size {
		arrivals = append(arrivals, arrival{int64(i) * 400, 40, 0}) // 40-byte packets: many in flight
	}
	events := drive(t, l, arrivals, nil)
	if len(l.line.buf) <= size || len(events) != len(arrivals) {
		t.Errorf("ring %d -> %d slots, %d events of %d", size, len(l.line.buf), len(events), len(arrivals))
	}
	for i, e := range events {
		if e.Meta.Slot != int32(i) {
			t.Fatalf("event %d is slot %d", i, e.Meta.Slot)
		}
	}
}

// Queued counts the time a packet waited, worked by hand at 12 Mbit/s
// (1500 bytes take 1 ms): A arrives at 0 on an idle link and leaves at 1
// ms; B arrives at 0.2 ms and waits until A is done (0.8 ms); C arrives at
// 1.5 ms behind B and waits until 2 ms (0.5 ms, 0.3 of it by 1.8 ms); D at
// 5 ms finds the link idle and waits not at all.
func TestLinkQueued(t *testing.T) {
	q, err := aqm.NewFIFO(aqm.FIFOConfig{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	l := newTestLink(t, Config{Rate: Const{12_000_000}}, q)
	var out []Event
	step := func(at int64, arrive bool) {
		out = l.Poll(at, out[:0])
		if arrive {
			l.Enqueue(aqm.Meta{Len: 1500}, at)
		}
	}
	for _, c := range []struct {
		at     int64
		arrive bool
		stats  int64 // LinkStats.Queued after the step
		until  int64 // QueuedUntil(at)
	}{
		{0, true, 0, 0},
		{ms / 5, true, 0, 0},
		{ms, false, ms * 4 / 5, ms * 4 / 5},
		{ms * 3 / 2, true, ms * 4 / 5, ms * 4 / 5},
		{ms * 9 / 5, false, ms * 4 / 5, ms * 11 / 10},
		{2 * ms, false, ms * 13 / 10, ms * 13 / 10},
		{5 * ms, true, ms * 13 / 10, ms * 13 / 10},
		{7 * ms, false, ms * 13 / 10, ms * 13 / 10},
	} {
		step(c.at, c.arrive)
		if got, until := l.Stats().Queued, l.QueuedUntil(c.at); got != c.stats || until != c.until {
			t.Errorf("at %d ns: Queued %d, QueuedUntil %d; want %d, %d", c.at, got, until, c.stats, c.until)
		}
	}
}
