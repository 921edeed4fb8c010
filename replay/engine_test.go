package replay

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
)

// rec is one event a replay reported, as a test compares them.
type rec struct {
	kind  string // arrival, depart, drop, update
	at    int64  // when it happened
	i     int    // packet index (-1 for updates)
	ev    shaper.Event
	where DropPoint
	st    aqm.Stats // updates only
}

func (r rec) String() string {
	switch r.kind {
	case "update":
		return fmt.Sprintf("update@%d p=%d", r.at, r.st.Prob)
	case "drop":
		return fmt.Sprintf("drop(%s,%s)@%d #%d", r.where, r.ev.Verdict.Reason, r.at, r.i)
	}
	return fmt.Sprintf("%s@%d #%d", r.kind, r.at, r.i)
}

// recorder is a Handler that keeps every event.
type recorder struct {
	log   []rec
	fates map[int]rec // by packet index, built by fate
}

func (r *recorder) Arrival(p *Packet) error {
	r.log = append(r.log, rec{kind: "arrival", at: p.Time, i: p.Index})
	return nil
}

func (r *recorder) Depart(p *Packet, ev *shaper.Event) error {
	r.log = append(r.log, rec{kind: "depart", at: ev.At, i: p.Index, ev: *ev})
	return nil
}

func (r *recorder) Drop(p *Packet, ev *shaper.Event, where DropPoint) error {
	r.log = append(r.log, rec{kind: "drop", at: ev.At, i: p.Index, ev: *ev, where: where})
	return nil
}

func (r *recorder) Update(at int64, st *aqm.Stats) error {
	r.log = append(r.log, rec{kind: "update", at: at, i: -1, st: *st})
	return nil
}

// of returns the events of one kind.
func (r *recorder) of(kind string) []rec {
	var out []rec
	for _, e := range r.log {
		if e.kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// fate returns the depart or drop event of packet i.
func (r *recorder) fate(t *testing.T, i int) rec {
	t.Helper()
	if r.fates == nil {
		r.fates = map[int]rec{}
		for _, e := range r.log {
			if e.kind == "depart" || e.kind == "drop" {
				r.fates[e.i] = e
			}
		}
	}
	f, ok := r.fates[i]
	if !ok {
		t.Fatalf("packet %d has no fate in %v", i, r.log)
	}
	return f
}

// sliceSource replays packets given in a slice.
type sliceSource []Packet

func (s *sliceSource) Next(p *Packet) (bool, error) {
	if len(*s) == 0 {
		return false, nil
	}
	*p, *s = (*s)[0], (*s)[1:]
	return true, nil
}

// pkts builds packets of size bytes and codepoint ecn at the given times.
func pkts(size int32, ecn aqm.ECN, times ...int64) []Packet {
	out := make([]Packet, len(times))
	for k, t := range times {
		out[k] = Packet{Time: t, Len: size, ECN: ecn}
	}
	return out
}

func dualpi2(bps uint64, edit func(*aqm.Config)) Config {
	c := aqm.DefaultConfig()
	if edit != nil {
		edit(&c)
	}
	return Config{Link: shaper.Config{Rate: shaper.Const{BitsPerSecond: bps}}, Queue: aqm.Spec{Kind: aqm.KindDualPI2, DualPI2: c}, Seed: 1}
}

func fifo(bps uint64, limit uint32) Config {
	return Config{Link: shaper.Config{Rate: shaper.Const{BitsPerSecond: bps}}, Queue: aqm.Spec{Kind: aqm.KindFIFO, FIFO: aqm.FIFOConfig{Limit: limit}}, Seed: 1}
}

func run(t testing.TB, cfg Config, in []Packet) (*recorder, Result) {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	src := sliceSource(slices.Clone(in))
	res, err := e.Run(context.Background(), &src, r)
	if err != nil {
		t.Fatal(err)
	}
	return r, res
}

const ms = 1_000_000

// TestEventOrderAtEqualTimes: at 1 Mbit/s a 1500-byte packet takes 12 ms,
// so with tupdate 16 ms the link frees, the PI updates and packets arrive
// together at 48 ms. The limit of 2 packets makes the order visible: P0
// goes on the wire at 0, P1 and P2 fill the queue, and one packet arrives
// at each dequeue (12, 24, 36 ms) to refill it. At 48 ms the update runs
// first (the packet refused then sees its new p'), then the dequeue frees
// a place, which P6 takes, and P7 finds the queue full again.
func TestEventOrderAtEqualTimes(t *testing.T) {
	cfg := dualpi2(1_000_000, func(c *aqm.Config) { c.Limit = 2 })
	in := pkts(1500, aqm.ECT0, 0, 0, 0, 12*ms, 24*ms, 36*ms, 48*ms, 48*ms)
	for k := range in {
		in[k].Flow = uint32(k)
	}
	r, _ := run(t, cfg, in)

	var at48 []string
	for _, e := range r.log {
		if e.at == 48*ms {
			at48 = append(at48, e.String())
		}
	}
	u48 := r.of("update")[2]
	want := []string{
		fmt.Sprintf("update@%d p=%d", 48*ms, u48.st.Prob),
		fmt.Sprintf("depart@%d #3", 48*ms), // dequeued at 36 ms, on the wire 12 ms
		fmt.Sprintf("arrival@%d #6", 48*ms),
		fmt.Sprintf("arrival@%d #7", 48*ms),
		fmt.Sprintf("drop(enqueue,limit)@%d #7", 48*ms),
	}
	if !slices.Equal(at48, want) {
		t.Errorf("events at 48 ms:\n\t%v\nwant\n\t%v", at48, want)
	}
	u32 := r.of("update")[1]
	if u48.at != 48*ms || u32.at != 32*ms || u48.st.Prob == u32.st.Prob {
		t.Fatalf("updates %v and %v: want 32 and 48 ms with p' changed between them", u32, u48)
	}
	if p := r.fate(t, 7).ev.Prob; p != u48.st.Prob {
		t.Errorf("P7 refused with p' %d, want the 48 ms update's %d (update before arrival)", p, u48.st.Prob)
	}
	if f := r.fate(t, 4); f.ev.Deq != 48*ms || f.ev.Prob != u48.st.Prob {
		t.Errorf("P4 dequeued at %d with p' %d, want 48 ms and the 48 ms update's %d (update before dequeue)", f.ev.Deq, f.ev.Prob, u48.st.Prob)
	}
	if f := r.fate(t, 6); f.kind != "depart" || f.ev.Deq != 72*ms {
		t.Errorf("P6: %v deq %d, want delivered, dequeued at 72 ms (dequeue before arrival)", f, f.ev.Deq)
	}
}

// TestDepartureTime: a packet leaves the link ceil(8·bytes·1e9/rate) ns
// after it left the queue, and the next one leaves the queue then.
func TestDepartureTime(t *testing.T) {
	tests := []struct {
		bps   uint64
		bytes int32
		want  int64 // worked out by hand
	}{
		{10_000_000, 1500, 1_200_000},
		{100_000_000, 1500, 120_000},
		{3_000_000, 1000, 2_666_667},  // 2 666 666.67
		{1_000_000_000, 64, 512},      // exact
		{7, 1, 1_142_857_143},         // 1 142 857 142.86
		{12_000_000, 1500, 1_000_000}, // exact
		{999_999_999, 1500, 12_001},   // 12 000.000012
	}
	for _, tt := range tests {
		r, res := run(t, fifo(tt.bps, 10), pkts(tt.bytes, aqm.ECT1, 0, 0, 5))
		for i, want := range []int64{0, tt.want, 2 * tt.want} {
			f := r.fate(t, i)
			if f.ev.Deq != want || f.ev.Dep != want+tt.want || f.at != f.ev.Dep {
				t.Errorf("%d bytes at %d bit/s, packet %d: deq %d dep %d at %d, want deq %d dep %d", tt.bytes, tt.bps, i, f.ev.Deq, f.ev.Dep, f.at, want, want+tt.want)
			}
		}
		if res.Busy != 3*tt.want || res.LastDeparture != 3*tt.want {
			t.Errorf("%d bit/s: busy %d last departure %d, want %d", tt.bps, res.Busy, res.LastDeparture, 3*tt.want)
		}
	}
}

// TestDelayLine: each delivered packet leaves the delay line the delay
// after it left the link, in the order it left the link: an L4S packet
// that overtook Classic ones in the queue stays ahead, nothing else
// reorders.
func TestDelayLine(t *testing.T) {
	cfg := dualpi2(10_000_000, nil)
	cfg.Link.Delay = 10 * ms
	in := append(pkts(1500, aqm.ECT0, 0, 0, 0, 0), pkts(1500, aqm.ECT1, 100_000)...)
	r, res := run(t, cfg, in)
	deps := r.of("depart")
	if len(deps) != 5 {
		t.Fatalf("%d departures, want 5: %v", len(deps), r.log)
	}
	for k, d := range deps {
		if d.at != d.ev.Dep+10*ms {
			t.Errorf("packet %d released at %d, left the link at %d: want 10 ms later", d.i, d.at, d.ev.Dep)
		}
		if k > 0 && d.ev.Dep <= deps[k-1].ev.Dep {
			t.Errorf("packet %d (dep %d) released after packet %d (dep %d)", d.i, d.ev.Dep, deps[k-1].i, deps[k-1].ev.Dep)
		}
	}
	pos := func(i int) int { return slices.IndexFunc(deps, func(d rec) bool { return d.i == i }) }
	if pos(4) > pos(3) {
		t.Errorf("the L4S packet left after the last Classic one: order %v", deps)
	}
	if res.LastDeparture != 6*ms {
		t.Errorf("last departure %d, want 6 ms (five packets of 1.2 ms; the delay line is after it)", res.LastDeparture)
	}
}

// TestDrops: where a packet is dropped decides which times it has.
func TestDrops(t *testing.T) {
	t.Run("enqueue", func(t *testing.T) {
		// FIFO of 1: the first goes on the wire, the second waits, the third is refused.
		r, res := run(t, fifo(10_000_000, 1), pkts(1000, aqm.NotECT, 0, 0, 5))
		d := r.fate(t, 2)
		if d.kind != "drop" || d.where != AtEnqueue || d.ev.Verdict.Reason != aqm.ReasonLimit || d.at != 5 || d.ev.Deq != 0 || d.ev.Dep != 0 || d.ev.Meta.Arrival != 5 {
			t.Errorf("refused packet: %v %+v", d, d.ev)
		}
		if c := res.Queues[0]; c.Arrivals != 3 || c.Delivered != 2 || c.Drops[aqm.ReasonLimit] != 1 || c.Dequeued != 2 {
			t.Errorf("counts %+v", c)
		}
	})
	t.Run("dequeue", func(t *testing.T) {
		// 4x overload of Not-ECT: DualPI2 drops as the link pulls packets.
		var in []Packet
		for k := range 4000 {
			in = append(in, Packet{Time: int64(k) * 300_000, Len: 1500, ECN: aqm.NotECT})
		}
		r, res := run(t, dualpi2(10_000_000, nil), in)
		n := 0
		for _, d := range r.of("drop") {
			if d.where != AtDequeue || d.at != d.ev.Deq || d.ev.Dep != 0 || d.ev.Deq < d.ev.Meta.Arrival {
				t.Fatalf("drop %v: %+v, want at its dequeue, never on the link", d, d.ev)
			}
			n++
		}
		c := res.Queues[0]
		if n == 0 || uint64(n) != c.Drops[aqm.ReasonClassic]+c.Drops[aqm.ReasonOverload] || c.Arrivals != c.Delivered+uint64(n) {
			t.Errorf("%d drops at dequeue; counts %+v", n, c)
		}
	})
	t.Run("link", func(t *testing.T) {
		cfg := fifo(10_000_000, 10)
		cfg.Link.Loss = shaper.IID{P: 1}
		cfg.Link.Delay = 5 * ms
		r, res := run(t, cfg, pkts(1500, aqm.ECT1, 0, 0))
		for i, dep := range []int64{1_200_000, 2_400_000} {
			d := r.fate(t, i)
			if d.kind != "drop" || d.where != OnLink || d.ev.Verdict.Reason != aqm.ReasonLoss || d.at != dep || d.ev.Dep != dep {
				t.Errorf("packet %d: %v %+v, want lost as it left the link at %d", i, d, d.ev, dep)
			}
		}
		if res.LastDeparture != 2_400_000 || res.Queues[0].Drops[aqm.ReasonLoss] != 2 { // a FIFO is all Classic
			t.Errorf("last departure %d, counts %+v: lost packets left the link", res.LastDeparture, res.Queues[0])
		}
	})
}

// genPackets makes n packets arriving as a Poisson process at about bps,
// sizes 64..1500, ECN codepoints evenly mixed, 8 flows.
func genPackets(n int, bps float64, seed uint64) []Packet {
	rng := rand.New(rand.NewPCG(seed, 0))
	out := make([]Packet, n)
	t := 0.0
	sizes := []int32{64, 576, 1500, 1500, 1500}
	for k := range out {
		size := sizes[rng.IntN(len(sizes))]
		t += rng.ExpFloat64() * float64(size) * 8e9 / bps
		out[k] = Packet{Time: int64(t), Len: size, ECN: aqm.ECN(rng.IntN(4)), Flow: uint32(rng.IntN(8))}
	}
	return out
}

// TestSeeds: same packets, config and seed, same events; another seed
// changes the AQM's rolls; loss draws from its own stream, so adding it
// leaves every AQM decision where it was.
func TestSeeds(t *testing.T) {
	in := genPackets(3000, 20e6, 7) // 2x overload of a 10 Mbit/s link
	cfg := dualpi2(10_000_000, nil)
	a, _ := run(t, cfg, in)
	b, _ := run(t, cfg, in)
	if !slices.Equal(a.log, b.log) {
		t.Fatal("two runs with the same seed differ")
	}
	cfg.Seed = 2
	if c, _ := run(t, cfg, in); slices.Equal(a.log, c.log) {
		t.Error("seeds 1 and 2 gave the same events")
	}
	cfg.Seed = 1
	cfg.Link.Loss = shaper.IID{P: 0.05}
	lossy, res := run(t, cfg, in)
	lost := 0
	for i := range in {
		want, got := a.fate(t, i), lossy.fate(t, i)
		if got.where == OnLink && got.kind == "drop" {
			lost++
			if want.kind != "depart" || got.ev.Deq != want.ev.Deq {
				t.Fatalf("packet %d lost on the link, was %v without loss", i, want)
			}
			continue
		}
		if got.ev.Verdict != want.ev.Verdict || got.ev.Deq != want.ev.Deq || got.ev.Prob != want.ev.Prob {
			t.Fatalf("packet %d: %+v with loss, %+v without", i, got.ev, want.ev)
		}
	}
	if lost == 0 || uint64(lost) != res.Queues[0].Drops[aqm.ReasonLoss]+res.Queues[1].Drops[aqm.ReasonLoss] {
		t.Errorf("%d packets lost, counts %+v", lost, res.Queues)
	}
}

// TestIdleUpdates: every update from the first arrival until the last
// packet has left is reported, tupdate apart, idle ones included; none
// before the first arrival, so a trace in Unix time replays at once. Over
// a 10 s gap p' decays to 0 (the kernel takes 209 updates from its
// maximum), so the second burst starts from the state the first did.
func TestIdleUpdates(t *testing.T) {
	const epoch = 1_764_489_600_000_000_000 // a wall-clock time in ns, as captures carry
	const gap = 10_000 * ms
	var in []Packet
	for _, start := range []int64{epoch, epoch + gap} {
		in = append(in, pkts(1500, aqm.ECT0, slices.Repeat([]int64{start}, 20)...)...)
	}
	cfg := dualpi2(1_000_000, nil)
	cfg.Link.Delay = 5 * ms
	r, _ := run(t, cfg, in)
	ups := r.of("update")
	last := r.log[len(r.log)-1].at
	if len(ups) == 0 || ups[0].at < epoch || ups[0].at-epoch >= 16*ms {
		t.Fatalf("first update %v: want the first after the first arrival", ups[:min(len(ups), 1)])
	}
	for k := 1; k < len(ups); k++ {
		if ups[k].at-ups[k-1].at != 16*ms {
			t.Fatalf("updates at %d and %d: want every 16 ms", ups[k-1].at-epoch, ups[k].at-epoch)
		}
	}
	if end := ups[len(ups)-1].at; end > last || end+16*ms <= last {
		t.Errorf("last update at %d, last event at %d: want the last update before it", end-epoch, last-epoch)
	}
	// 20 packets of 12 ms: busy 240 ms; updates in the gap are idle. Both
	// bursts start on an update time (epoch and gap are multiples of
	// 16 ms): that update runs before the arrivals, so compare the next.
	var first, second rec
	idle := 0
	for _, u := range ups {
		switch {
		case u.at > epoch+300*ms && u.at < epoch+gap:
			idle++
			if u.st.DelayC != 0 || u.st.DelayL != 0 {
				t.Fatalf("idle update %v with delays %d, %d", u, u.st.DelayC, u.st.DelayL)
			}
		case u.at > epoch+gap && second.kind == "":
			second = u
		case u.at > epoch && u.at < epoch+gap && first.kind == "":
			first = u
		}
	}
	if want := int((gap - 300*ms) / (16 * ms)); idle < want {
		t.Errorf("%d idle updates in the gap, want %d", idle, want)
	}
	if idle > 0 && ups[len(ups)-1].st.Prob == 0 {
		t.Error("p' is 0 at the end of the second burst: the bursts did not load the queue")
	}
	if first.st.Prob != second.st.Prob || first.at-epoch != second.at-epoch-gap || first.st.Prob == 0 {
		t.Errorf("first updates of the bursts %v and %v: want the same offset and p' > 0", first, second)
	}
}

// TestFIFONoUpdates: a queue without periodic updates reports none, and
// the engine needs no change for it.
func TestFIFONoUpdates(t *testing.T) {
	r, res := run(t, fifo(10_000_000, 100), genPackets(500, 5e6, 3))
	if n := len(r.of("update")); n != 0 || res.Updates != 0 {
		t.Errorf("%d updates (%d counted) from a FIFO", n, res.Updates)
	}
	if res.Packets != 500 || len(r.of("arrival")) != 500 {
		t.Errorf("%d packets, %d arrivals", res.Packets, len(r.of("arrival")))
	}
}

// TestTimeOrder: events come in time order, every packet has exactly one
// fate, after its arrival.
func TestTimeOrder(t *testing.T) {
	cfg := dualpi2(10_000_000, nil)
	cfg.Link.Delay = 3 * ms
	cfg.Link.Loss = shaper.IID{P: 0.01}
	in := genPackets(5000, 15e6, 11)
	r, res := run(t, cfg, in)
	fates := make([]int, len(in))
	var prev int64
	for _, e := range r.log {
		if e.at < prev {
			t.Fatalf("%v after an event at %d", e, prev)
		}
		prev = e.at
		if e.kind == "depart" || e.kind == "drop" {
			fates[e.i]++
			if e.at < in[e.i].Time {
				t.Fatalf("%v before its arrival at %d", e, in[e.i].Time)
			}
		}
	}
	for i, n := range fates {
		if n != 1 {
			t.Fatalf("packet %d has %d fates", i, n)
		}
	}
	for k, q := range res.Queues {
		var drops uint64
		for _, d := range q.Drops {
			drops += d
		}
		if q.Arrivals != q.Delivered+drops {
			t.Errorf("queue %d: %d arrivals, %d delivered + %d dropped", k, q.Arrivals, q.Delivered, drops)
		}
	}
}

// errHandler fails on the n-th departure.
type errHandler struct {
	recorder
	n int
}

func (h *errHandler) Depart(p *Packet, ev *shaper.Event) error {
	if h.n--; h.n == 0 {
		return fmt.Errorf("disk full")
	}
	return nil
}

// TestHandlerError: a handler's error stops the replay and comes back.
func TestHandlerError(t *testing.T) {
	e, err := New(dualpi2(10_000_000, nil))
	if err != nil {
		t.Fatal(err)
	}
	src := sliceSource(genPackets(5000, 5e6, 1))
	h := &errHandler{n: 3}
	res, err := e.Run(context.Background(), &src, h)
	if err == nil || err.Error() != "disk full" {
		t.Fatalf("error %v, want the handler's", err)
	}
	if res.Packets > 100 {
		t.Errorf("%d packets replayed after the error", res.Packets)
	}
}

// TestNewErrors: a bad queue or link is refused before anything runs.
func TestNewErrors(t *testing.T) {
	bad := dualpi2(10_000_000, func(c *aqm.Config) { c.Coupling = 0 })
	if _, err := New(bad); err == nil {
		t.Error("coupling 0 accepted")
	}
	if _, err := New(Config{Link: shaper.Config{Rate: shaper.Const{BitsPerSecond: 1}}, Queue: aqm.Spec{Kind: "codel?"}}); err == nil || !strings.Contains(err.Error(), "codel?") {
		t.Errorf("unknown kind: %v", err)
	}
	if _, err := New(Config{Queue: aqm.Spec{Kind: aqm.KindFIFO, FIFO: aqm.FIFOConfig{Limit: 1}}}); err == nil {
		t.Error("no rate accepted")
	}
}
