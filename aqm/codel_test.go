package aqm

import (
	"math"
	"testing"
)

func newTestCoDel(t testing.TB, mod func(*CodelConfig)) *CoDel {
	t.Helper()
	return newTestQueue(t, DefaultCodelConfig(), mod, func(c CodelConfig) (*CoDel, error) { return NewCoDel(c) })
}

// standingQueue runs a queue with a standing backlog: n packets of size
// bytes and codepoint e at time 0, then every step one arrival and one
// departure (dequeuing again after each drop), until end. It returns the
// times of the marks and the drops the AQM made and their Verdict.Sub,
// and checks after every
// step that each packet accepted is held, sent or dropped.
func standingQueue(t *testing.T, q Queue, e ECN, n int, size int32, step, end int64) (marks, drops, subs []int64) {
	t.Helper()
	var acc accounting
	for range n {
		acc.enqueue(t, q, pkt(e, size), 0)
	}
	for now := step; now <= end; now += step {
		acc.enqueue(t, q, pkt(e, size), now)
		for {
			_, v, ok := acc.dequeue(q, now)
			if !ok {
				t.Fatalf("t=%v: queue empty", now)
			}
			if v.Action != Pass {
				subs = append(subs, int64(v.Sub))
			}
			if v.Action == Drop {
				drops = append(drops, now)
				continue
			}
			if v.Action == Mark {
				marks = append(marks, now)
			}
			break
		}
		acc.check(t, q, now)
	}
	return marks, drops, subs
}

// accounting counts what a driver saw, to check a queue's books.
type accounting struct {
	accepted, refused, sent, marked, dropped uint64
}

func (a *accounting) enqueue(t testing.TB, q Queue, m Meta, now int64) Verdict {
	v := q.Enqueue(m, now)
	if v.Action == Drop {
		a.refused++
	} else {
		a.accepted++
	}
	return v
}

func (a *accounting) dequeue(q Queue, now int64) (Meta, Verdict, bool) {
	m, v, ok := q.Dequeue(now)
	switch {
	case !ok:
	case v.Action == Drop:
		a.dropped++
	default:
		a.sent++
		if v.Action == Mark {
			a.marked++
		}
	}
	return m, v, ok
}

// check: every packet accepted is held, sent or dropped; the queue's
// counters agree with what the driver saw, and drops add up by reason
// and by queue.
func (a *accounting) check(t testing.TB, q Queue, now int64) {
	t.Helper()
	s := q.Stats(now)
	held, _ := q.Len()
	if a.accepted != a.sent+a.dropped+uint64(held) {
		t.Fatalf("t=%d: accepted %d != sent %d + dropped %d + held %d", now, a.accepted, a.sent, a.dropped, held)
	}
	if s.SentPackets != a.sent || s.C.Marked+s.L.Marked != a.marked || s.Dropped != a.dropped+a.refused {
		t.Fatalf("t=%d: stats sent %d marked %d dropped %d; driver saw %d %d %d+%d",
			now, s.SentPackets, s.C.Marked+s.L.Marked, s.Dropped, a.sent, a.marked, a.dropped, a.refused)
	}
	var byReason uint64
	for _, n := range s.DropsBy {
		byReason += n
	}
	if byReason != s.Dropped || s.C.Dropped+s.L.Dropped != s.Dropped || s.C.Sent+s.L.Sent != s.SentPackets {
		t.Fatalf("t=%d: drops %d, by reason %d, by queue %d; sent %d by queue %d", now, s.Dropped,
			byReason, s.C.Dropped+s.L.Dropped, s.SentPackets, s.C.Sent+s.L.Sent)
	}
}

// The CoDel timeline in CoDel time (ns >> 10, the kernel's codel_time_t):
// target 5 ms = 4882, interval 100 ms = 97656. With 20 packets queued at
// time 0 and one in, one out every 1 ms, the head's sojourn reaches the
// target at 5 ms (4882 − 0 is not below 4882), so first_above_time =
// 4882 + 97656 = 102538; the first drop is at the first dequeue after it,
// 105 ms (105 ms >> 10 = 102539; 104 ms is 101562) — RFC 8289 §3.2: an
// interval above target. Then count = 1, rec_inv_sqrt = 0xffff and
// drop_next = 102539 + 97656·0xffff0000/2^32 = 102539 + 97654 = 200193,
// reached at 205 ms (200193·1024 ns = 204.998 ms). Each later spacing is
// interval·rec_inv_sqrt after one Newton step per count (RFC 8289 §3.3,
// interval/√count, as the kernel approximates it):
//
//	count 2: invsqrt 0xffff0000, invsqrt²>>32 = 0xfffe0001,
//	         (3·2^32 − 2·0xfffe0001)>>2 = 0x4000ffff, ·invsqrt>>31 =
//	         0x80017ffc, rec = 0x8001 (0.50002 where 1/√2 = 0.7071):
//	         spacing 97656·0x80010000/2^32 = 48829 → drop_next 249022,
//	         reached at 255 ms (254.9985 ms);
//	count 3: rec 0x9000 (0.5625; 1/√3 = 0.5774): spacing 54931 →
//	         drop_next 303953, reached at 312 ms (311.2479 ms).
//
// The same timeline marks instead of dropping ECT packets with ecn on.
func TestCoDelFirstDropAndControlLaw(t *testing.T) {
	want := []int64{105 * ms, 205 * ms, 255 * ms, 312 * ms}
	for _, tc := range []struct {
		name string
		ecn  bool
		e    ECN
		mark bool
	}{
		{"noecn Not-ECT drops", false, NotECT, false},
		{"noecn ECT(0) drops", false, ECT0, false},
		{"ecn ECT(0) marks", true, ECT0, true},
		{"ecn ECT(1) marks", true, ECT1, true},
		{"ecn Not-ECT drops", true, NotECT, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newTestCoDel(t, func(c *CodelConfig) { c.ECN = tc.ecn })
			marks, drops, counts := standingQueue(t, q, tc.e, 20, 1500, ms, 320*ms)
			got, other := drops, marks
			if tc.mark {
				got, other = marks, drops
			}
			if len(other) != 0 {
				t.Errorf("unexpected %v", other)
			}
			if !equalInts(got, want) {
				t.Errorf("signals at %v, want %v", got, want)
			}
			if !equalInts(counts, []int64{1, 2, 3, 4}) {
				t.Errorf("drop states (Verdict.Sub) %v, want the counts 1 2 3 4", counts)
			}
			s := q.Stats(320 * ms)
			if s.CoDel.Count != 4 || s.CoDel.LastCount != 1 || !s.CoDel.Dropping {
				t.Errorf("xstats %+v: want count 4 lastcount 1 dropping", s.CoDel)
			}
			if tc.mark && (s.CoDel.ECNMark != 4 || s.ECNMark != 4 || s.C.Marked != 4) {
				t.Errorf("ecn_mark %d ECNMark %d C.Marked %d, want 4", s.CoDel.ECNMark, s.ECNMark, s.C.Marked)
			}
			if !tc.mark && (s.DropsBy[ReasonCodel] != 4 || s.Dropped != 4) {
				t.Errorf("drops by codel %d, total %d, want 4", s.DropsBy[ReasonCodel], s.Dropped)
			}
		})
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The Newton step and control law against the kernel's fixed point and
// RFC 8289's interval/√count: the kernel's one step per count starts low
// (0.5 at count 2) and converges; by count 5 it is within 1.5 %.
func TestCoDelControlLawSpacing(t *testing.T) {
	iv := int64(DefaultCodelInterval >> codelShift) // 97656
	v := codelVars{count: 1, recInvSqrt: 0xffff}
	wantRec := []uint16{0xffff, 0x8001, 0x9000, 0x7ce0, 0x7107, 0x6771, 0x600c}
	for c := 1; c <= len(wantRec); c++ {
		if c > 1 {
			v.count = uint32(c)
			v.newtonStep()
		}
		if v.recInvSqrt != wantRec[c-1] {
			t.Fatalf("count %d: rec_inv_sqrt %#x, want %#x", c, v.recInvSqrt, wantRec[c-1])
		}
		spacing := controlLaw(0, iv, v.recInvSqrt)
		rfc := float64(iv) / math.Sqrt(float64(c))
		if c >= 5 && math.Abs(float64(spacing)-rfc)/rfc > 0.015 {
			t.Errorf("count %d: spacing %d, RFC %.0f: more than 1.5 %% apart", c, spacing, rfc)
		}
	}
	if got := controlLaw(100, iv, 0xffff); got != 100+97654 {
		t.Errorf("control law at count 1: %d, want 100 + 97654", got)
	}
}

// Re-entering the dropping state within 16 intervals of the last drop
// starts from count − lastcount when that is above 1 (codel_impl.h):
// count 4, lastcount 1 → count 3, one Newton step from 0x7ce0 gives
// 0x8ebe (0.5576; 1/√3 = 0.5774), drop_next = now + 97656·0x8ebe0000/2^32
// = now + 54451. Later than 16 intervals, count restarts at 1.
func TestCoDelReentry(t *testing.T) {
	for _, tc := range []struct {
		name         string
		sinceDrop    int64 // CoDel time since the last drop_next
		count, recIn uint32
		wantCount    uint32
		wantRec      uint16
		wantSpacing  int64
	}{
		{"within 16 intervals", 10 * 97656, 4, 0x7ce0, 3, 0x8ebe, 54451},
		{"after 16 intervals", 16 * 97656, 4, 0x7ce0, 1, 0xffff, 97654},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newTestCoDel(t, nil)
			for range 10 {
				mustEnqueue(t, q, pkt(NotECT, 1500), 0)
			}
			now := int64(2000 * ms)
			nowC := now >> codelShift
			q.v = codelVars{count: tc.count, lastcount: 1, recInvSqrt: uint16(tc.recIn),
				firstAboveTime: 1, dropNext: nowC - tc.sinceDrop}
			_, v := mustDequeue(t, q, now)
			if v.Action != Drop || v.Reason != ReasonCodel {
				t.Fatalf("verdict %+v, want a codel drop", v)
			}
			if q.v.count != tc.wantCount || q.v.lastcount != tc.wantCount || q.v.recInvSqrt != tc.wantRec {
				t.Errorf("count %d lastcount %d rec %#x, want %d %d %#x",
					q.v.count, q.v.lastcount, q.v.recInvSqrt, tc.wantCount, tc.wantCount, tc.wantRec)
			}
			if q.v.dropNext != nowC+tc.wantSpacing {
				t.Errorf("drop_next now+%d, want now+%d", q.v.dropNext-nowC, tc.wantSpacing)
			}
		})
	}
}

// No drop while at most one MTU is queued, however long the sojourn
// (codel_should_drop's backlog guard); ce_threshold marks ECN-capable
// packets whose sojourn is strictly above it, counted as ce_mark.
func TestCoDelGuardsAndCEThreshold(t *testing.T) {
	q := newTestCoDel(t, nil)
	for i := range 5 {
		now := int64(i) * 1000 * ms
		mustEnqueue(t, q, pkt(NotECT, 1500), now)
		if _, v := mustDequeue(t, q, now+500*ms); v.Action != Pass {
			t.Fatalf("lone packet with 500 ms sojourn: %+v, want sent", v)
		}
	}

	q = newTestCoDel(t, func(c *CodelConfig) { c.CEThreshold = ms })
	for _, tc := range []struct {
		e       ECN
		sojourn int64
		want    Action
	}{
		// 1 ms >> 10 = 976: a sojourn of 976 is not above it, 977 is.
		{ECT1, 976 << codelShift, Pass},
		{ECT1, 977 << codelShift, Mark},
		{ECT0, 2 * ms, Mark},
		{CE, 2 * ms, Mark},
		{NotECT, 2 * ms, Pass},
	} {
		q.Enqueue(pkt(tc.e, 100), 0)
		_, v := mustDequeue(t, q, tc.sojourn)
		if v.Action != tc.want || (tc.want == Mark && v.Reason != ReasonCEThreshold) {
			t.Errorf("%v after %v: %+v, want %v", tc.e, tc.sojourn, v, tc.want)
		}
	}
	if s := q.Stats(0); s.CoDel.CEMark != 3 || s.CoDel.ECNMark != 0 {
		t.Errorf("ce_mark %d ecn_mark %d, want 3 0", s.CoDel.CEMark, s.CoDel.ECNMark)
	}
}

func TestCoDelLimitAndValidate(t *testing.T) {
	q := newTestCoDel(t, func(c *CodelConfig) { c.Limit = 3 })
	for range 3 {
		mustEnqueue(t, q, pkt(ECT0, 100), 0)
	}
	if v := q.Enqueue(pkt(ECT0, 100), 0); v.Action != Drop || v.Reason != ReasonLimit {
		t.Fatalf("4th packet over limit 3: %+v", v)
	}
	if s := q.Stats(0); s.CoDel.DropOverlimit != 1 || s.Overlimits != 1 || s.DropsBy[ReasonLimit] != 1 {
		t.Fatalf("stats %+v", s.CoDel)
	}
	for _, tc := range []struct {
		mod   func(*CodelConfig)
		field string
	}{
		{func(c *CodelConfig) { c.Limit = 0 }, "limit"},
		{func(c *CodelConfig) { c.Interval = 0 }, "interval"},
		{func(c *CodelConfig) { c.Target = -1 }, "target"},
		{func(c *CodelConfig) { c.CEThreshold = -2 }, "ce_threshold"},
		{func(c *CodelConfig) { c.MTU = 0 }, "mtu"},
	} {
		cfg := DefaultCodelConfig()
		tc.mod(&cfg)
		err := cfg.Validate()
		ce, ok := err.(*ConfigError)
		if !ok || ce.Field != tc.field {
			t.Errorf("Validate(%+v) = %v, want a ConfigError on %q", cfg, err, tc.field)
		}
	}
}
