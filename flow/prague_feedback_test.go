package flow

import (
	"context"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/flow/prague"
	"github.com/pi2hop/pi2hop/flow/wire"
	"github.com/pi2hop/pi2hop/internal/race"
)

// The receiver's blocks and the sender's reading of them, in virtual
// time: 1..6 sent; 3 lost, 5 arrives CE and late (after 6); the receiver
// reports every 25 ms. Then 7 is lost and 8 arrives: the next block starts
// at 8, and the sender counts 7 lost from the gap before it.
func TestBlockFeedbackCounters(t *testing.T) {
	rx := newBlockReceiver(25*time.Millisecond, 1400)
	var tx blockSender
	var sent int32 // highest sequence number sent
	var msgs [][]byte
	send := func(p []byte) error { msgs = append(msgs, append([]byte(nil), p...)); return nil }
	deliver := func(now int64) (rtts []int64, got []int32) {
		for _, m := range msgs {
			a, err := wire.DecodeBlockACK(m, nil)
			if err != nil {
				t.Fatal(err)
			}
			r, ok := tx.report(now, a, sent, func(seq int32) { got = append(got, seq) })
			if !ok {
				t.Fatalf("block %+v refused with %d sent", a, sent)
			}
			rtts = append(rtts, r...)
		}
		msgs = nil
		return rtts, got
	}
	// Sent at 0, 1000, … µs; the path takes 10 ms each way.
	for seq := int32(1); seq <= 6; seq++ {
		tx.sent(int64(seq-1)*1000, seq)
	}
	sent = 6
	for _, a := range []struct {
		seq int32
		at  int64
		ecn aqm.ECN
	}{{1, 10000, aqm.ECT1}, {2, 11000, aqm.ECT1}, {4, 13000, aqm.ECT1}, {6, 15000, aqm.ECT1}, {5, 15500, aqm.CE}} {
		rx.arrived(a.at, a.seq, a.ecn)
		if err := rx.flush(a.at, false, send); err != nil {
			t.Fatal(err)
		}
	}
	if len(msgs) != 0 {
		t.Fatalf("%d reports before the 25 ms period (first arrival at 10 ms)", len(msgs))
	}
	if err := rx.flush(35000, false, send); err != nil || len(msgs) != 1 {
		t.Fatalf("at 35 ms: %d reports, %v; want 1", len(msgs), err)
	}
	a, _ := wire.DecodeBlockACK(msgs[0], nil)
	// Arrival offsets: 35 − 10 = 25 ms -> (25000+512)>>10 = 24; 24 ms -> 23;
	// 22 ms -> 21 (21.98); 20 ms -> 20 (19.98 rounds to 20); 19.5 ms -> 19.
	want := []wire.BlockReport{
		{Received: true, ECN: aqm.ECT1, ATO: 24}, {Received: true, ECN: aqm.ECT1, ATO: 23},
		{}, {Received: true, ECN: aqm.ECT1, ATO: 21}, {Received: true, ECN: aqm.CE, ATO: 19},
		{Received: true, ECN: aqm.ECT1, ATO: 20},
	}
	if a.Begin != 1 || len(a.Reports) != len(want) {
		t.Fatalf("block begins at %d with %d reports, want 1 and %d", a.Begin, len(a.Reports), len(want))
	}
	for i := range want {
		if a.Reports[i] != want[i] {
			t.Errorf("report for %d: %+v, want %+v", i+1, a.Reports[i], want[i])
		}
	}
	// The block reaches the sender 10 ms later, at 45 ms. RTT = 45 ms −
	// ATO·1024 µs − send time: seq 1: 45000 − 24576 − 0 = 20424.
	rtts, got := deliver(45000)
	if tx.received != 5 || tx.ce != 1 || tx.lost != 1 || tx.errorL4S {
		t.Errorf("after block 1: received %d, CE %d, lost %d, error %v; want 5, 1, 1, false", tx.received, tx.ce, tx.lost, tx.errorL4S)
	}
	if len(rtts) != 5 || rtts[0] != 20424 || len(got) != 5 {
		t.Errorf("RTT samples %v, newly received %v; want 5 samples, the first 20424 µs", rtts, got)
	}
	// 7 and 8 sent at 40 and 41 ms; 7 lost; 8 arrives at 51 ms, Not-ECT
	// (bleached); the next report goes out at 60 ms (due 35 + 25).
	tx.sent(40000, 7)
	tx.sent(41000, 8)
	sent = 8
	rx.arrived(51000, 8, aqm.NotECT)
	if err := rx.flush(59999, false, send); err != nil || len(msgs) != 0 {
		t.Fatalf("report before the period: %d, %v", len(msgs), err)
	}
	if err := rx.flush(60000, false, send); err != nil || len(msgs) != 1 {
		t.Fatalf("at 60 ms: %d reports, %v", len(msgs), err)
	}
	if a, _ := wire.DecodeBlockACK(msgs[0], nil); a.Begin != 8 || len(a.Reports) != 1 {
		t.Errorf("second block begins at %d with %d reports, want 8 and 1", a.Begin, len(a.Reports))
	}
	deliver(70000)
	if tx.received != 6 || tx.lost != 2 || !tx.errorL4S {
		t.Errorf("after block 2: received %d, lost %d, error %v; want 6, 2, true", tx.received, tx.lost, tx.errorL4S)
	}
	// 3 turns up very late (at 80 ms), after everything was reported: the
	// next block is 3 alone (as udp_prague's receiver starts a new range at
	// the first packet after a report), and the sender un-loses it.
	rx.arrived(80000, 3, aqm.ECT1)
	if err := rx.flush(85000, false, send); err != nil || len(msgs) != 1 {
		t.Fatalf("at 85 ms: %d reports, %v", len(msgs), err)
	}
	if a, _ := wire.DecodeBlockACK(msgs[0], nil); a.Begin != 3 || len(a.Reports) != 1 {
		t.Errorf("late block begins at %d with %d reports, want 3 and 1", a.Begin, len(a.Reports))
	}
	if _, got := deliver(95000); len(got) != 1 || got[0] != 3 {
		t.Errorf("newly received %v, want [3]", got)
	}
	if tx.received != 7 || tx.lost != 1 || tx.lastAck != 8 {
		t.Errorf("after the late packet: received %d, lost %d, last %d; want 7, 1 (seq 7), 8", tx.received, tx.lost, tx.lastAck)
	}
	// 9 and 10 arrive, then 7 late while they wait to be reported: the
	// range reopens at 7, and 8 (reported 60 ms ago, within 250 ms) is
	// reported again as received; the sender counts 7, 9 and 10 once.
	tx.sent(90000, 9)
	tx.sent(91000, 10)
	sent = 10
	rx.arrived(100000, 9, aqm.ECT1)
	rx.arrived(101000, 10, aqm.ECT1)
	rx.arrived(102000, 7, aqm.ECT1)
	if err := rx.flush(110000, false, send); err != nil || len(msgs) != 1 {
		t.Fatalf("at 110 ms: %d reports, %v", len(msgs), err)
	}
	a, _ = wire.DecodeBlockACK(msgs[0], nil)
	if a.Begin != 7 || len(a.Reports) != 4 || !a.Reports[0].Received || !a.Reports[1].Received || a.Reports[1].ATO != 58 {
		// 8 arrived at 51 ms: (110000 − 51000 + 512) >> 10 = 58.
		t.Errorf("reopened block %+v; want 7..10 all received, 8 with ATO 58", a)
	}
	if _, got := deliver(120000); len(got) != 3 || tx.received != 10 || tx.lost != 0 || tx.lastAck != 10 {
		t.Errorf("newly received %v; received %d, lost %d, last %d; want [7 9 10], 10, 0, 10", got, tx.received, tx.lost, tx.lastAck)
	}
}

// A block that is not our receiver's (reports past what was sent, a
// begin far in the past or the future, 0) changes nothing.
func TestBlockFeedbackRefusesBogus(t *testing.T) {
	var tx blockSender
	for seq := int32(1); seq <= 10; seq++ {
		tx.sent(int64(seq), seq)
	}
	one := []wire.BlockReport{{Received: true, ECN: aqm.ECT1}}
	for _, a := range []wire.BlockACK{
		{Begin: 11, Reports: one},                        // not sent yet
		{Begin: 9, Reports: make([]wire.BlockReport, 3)}, // 9..11
		{Begin: 0x7fffff00, Reports: one},                // far ahead: udp_prague would walk the gap
		{Begin: 10 - blockRing, Reports: one},            // older than the ring
		{Begin: 0, Reports: one},                         // sequence numbers start at 1
	} {
		if rtts, ok := tx.report(100, a, 10, func(int32) { t.Errorf("block at %d: a packet counted received", a.Begin) }); ok || rtts != nil {
			t.Errorf("block at %d with %d reports accepted", a.Begin, len(a.Reports))
		}
	}
	if tx.received != 0 || tx.lost != 0 || tx.lastAck != 0 {
		t.Errorf("after bogus blocks: received %d, lost %d, last %d; want 0, 0, 0", tx.received, tx.lost, tx.lastAck)
	}
}

// A long run of packets is reported in messages of at most the packet
// size.
func TestBlockFeedbackSplitsBySize(t *testing.T) {
	rx := newBlockReceiver(25*time.Millisecond, 150) // (150 − 7)/2 = 71 reports a message
	for seq := int32(1); seq <= 200; seq++ {
		rx.arrived(int64(seq), seq, aqm.ECT1)
	}
	var sizes []int
	var begins []int32
	err := rx.flush(30000, false, func(p []byte) error {
		a, err := wire.DecodeBlockACK(p, nil)
		sizes, begins = append(sizes, len(p)), append(begins, a.Begin)
		return err
	})
	// 200 = 71 + 71 + 58: 149, 149 and 7 + 116 = 123 bytes.
	if err != nil || len(sizes) != 3 || sizes[0] != 149 || sizes[1] != 149 || sizes[2] != 123 ||
		begins[0] != 1 || begins[1] != 72 || begins[2] != 143 {
		t.Errorf("messages of %v bytes at %v, %v; want [149 149 123] at [1 72 143]", sizes, begins, err)
	}
}

// goodputIn is the mean goodput of the intervals ending after from and by
// to (seconds), and the seconds they cover.
func goodputIn(ivs []Interval, from, to float64) (bps, secs float64) {
	var bits float64
	for _, iv := range ivs {
		if iv.T > from && iv.T <= to {
			bits += iv.GoodputBps * iv.Dur
			secs += iv.Dur
		}
	}
	return bits / secs, secs
}

// runPair runs PragueSend against PragueRecv on loopback and returns both
// summaries and errors.
func runPair(t *testing.T, scfg, rcfg PragueConfig) (SenderSummary, ReceiverSummary, error, error) {
	t.Helper()
	tx, rx := udpPair(t, "127.0.0.1:0")
	return runPairOn(tx, rx, scfg, rcfg)
}

func runPairOn(tx, rx *net.UDPConn, scfg, rcfg PragueConfig) (SenderSummary, ReceiverSummary, error, error) {
	// 100 ms of grace: time for the last block report.
	return sendAndReceive(15*time.Second, 100*time.Millisecond,
		func(ctx context.Context) (SenderSummary, error) { return PragueSend(ctx, tx, addrOf(rx), scfg, nil) },
		func(ctx context.Context) (ReceiverSummary, error) { return PragueRecv(ctx, rx, rcfg, nil) })
}

// At a paced rate (10 Mbit/s, below what loopback carries) block feedback
// delivers what per-packet ACKs do, ±5 %, once both reached the rate (the
// ramp from 100 kbit/s takes about half a second: 17.9 Mbit/s per second
// of additive growth at vRTT 25 ms), and the sender's counters agree with
// the receiver's. The two pairs run at the same time, so that whatever
// else the machine does slows both alike.
func TestBlockFeedbackGoodput(t *testing.T) {
	type result struct {
		ss       SenderSummary
		rs       ReceiverSummary
		err, rer error
	}
	var (
		wg  sync.WaitGroup
		res [2]result
	)
	for i, block := range []bool{false, true} {
		cfg := PragueConfig{MaxRate: 10_000_000, Duration: 5 * time.Second, Interval: 500 * time.Millisecond, RFC8888: block}
		rcfg := cfg
		rcfg.Duration = 0
		tx, rx := udpPair(t, "127.0.0.1:0")
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &res[i]
			r.ss, r.rs, r.err, r.rer = runPairOn(tx, rx, cfg, rcfg)
		}()
	}
	wg.Wait()
	var goodput [2]float64
	for i, block := range []bool{false, true} {
		ss, rs := res[i].ss, res[i].rs
		if res[i].err != nil || res[i].rer != nil {
			t.Fatalf("rfc8888 %v: send: %v, recv: %v", block, res[i].err, res[i].rer)
		}
		t.Logf("rfc8888 %v: sender goodput %.2f Mbit/s, %d RTT samples, received %d, lost %d, timeouts %d; receiver %.2f Mbit/s, %d pkts",
			block, ss.GoodputBps/1e6, len(ss.RTT), ss.Received, ss.Lost, ss.Timeouts, rs.GoodputBps/1e6, rs.Packets)
		if ss.Timeouts != 0 || ss.Lost != 0 || ss.Received < rs.Packets-int64(rs.Packets/50) || ss.Received > rs.Packets {
			t.Errorf("rfc8888 %v: sender counts %d received, %d lost, %d timeouts; receiver %d packets", block, ss.Received, ss.Lost, ss.Timeouts, rs.Packets)
		}
		if len(ss.RTT) < int(ss.Received)/2 {
			t.Errorf("rfc8888 %v: %d RTT samples for %d packets", block, len(ss.RTT), ss.Received)
		}
		// Sane samples: a packet matched to the wrong send time (a ring or
		// offset mix-up) would be off by seconds; a busy machine can hold
		// a loopback packet back some 100 ms.
		for _, r := range ss.RTT {
			if r <= 0 || r > time.Second {
				t.Fatalf("rfc8888 %v: RTT sample %v on loopback", block, r)
			}
		}
		var secs float64
		goodput[i], secs = goodputIn(rs.Intervals, 1.5, 5.01)
		if secs < 3 {
			t.Fatalf("rfc8888 %v: %.2f s of receiver intervals in 1.5..5 s: %+v", block, secs, rs.Intervals)
		}
		t.Logf("rfc8888 %v: %.2f Mbit/s from 1.5 to 5 s", block, goodput[i]/1e6)
	}
	// Under the race detector the pairs may not reach the paced rate:
	// the ratio is then how the two CPU-bound senders shared the cores,
	// not what the feedback delivers, so it is judged in the normal
	// build only.
	if r := goodput[1] / goodput[0]; race.Enabled {
		t.Logf("race detector on: goodput ratio %.3f not judged", r)
	} else if r < 0.95 || r > 1.05 {
		t.Errorf("goodput with block feedback %.2f Mbit/s, with per-packet ACKs %.2f (ratio %.3f); want ±5 %%",
			goodput[1]/1e6, goodput[0]/1e6, r)
	}
}

// A sender told the wrong feedback format says which one its receiver
// sends and stops, well within 4 s, both ways.
func TestFeedbackMismatch(t *testing.T) {
	for _, tc := range []struct {
		send, recv bool
		want       string
	}{
		{false, true, "receiver sends type-18 block feedback: run with --rfc8888"},
		{true, false, "receiver sends type-17 per-packet ACKs: run without --rfc8888"},
	} {
		cfg := PragueConfig{MaxRate: 10_000_000, Duration: 10 * time.Second, RFC8888: tc.send}
		rcfg := PragueConfig{RFC8888: tc.recv}
		start := time.Now()
		_, _, err, rerr := runPair(t, cfg, rcfg)
		took := time.Since(start)
		if rerr != nil {
			t.Errorf("receiver: %v", rerr)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "is the receiver running") {
			t.Errorf("sender rfc8888=%v, receiver rfc8888=%v: err %v; want %q", tc.send, tc.recv, err, tc.want)
		}
		if took > 4*time.Second {
			t.Errorf("the sender took %v to notice, want < 4 s", took)
		}
		t.Logf("%v after %v", err, took.Round(time.Millisecond))
	}
}

// The video call over block feedback: the frames get through as with
// per-packet ACKs, the sender takes its RTT samples from the blocks, and
// a video sender told the wrong format says so.
func TestVideoBlockFeedback(t *testing.T) {
	run := func(scfg, rcfg VideoConfig) (VideoSenderSummary, VideoReceiverSummary, error, error) {
		tx, rx := udpPair(t, "127.0.0.1:0")
		return runVideoOn(tx, rx, scfg, rcfg)
	}
	cfg := VideoConfig{Duration: 2 * time.Second, Seed: 1, RFC8888: true}
	rcfg := cfg
	rcfg.Duration = 0
	ss, rs, err, rerr := run(cfg, rcfg)
	if err != nil || rerr != nil {
		t.Fatalf("send: %v, recv: %v", err, rerr)
	}
	t.Logf("sender: %d frames, %d pkts, %d RTT samples, received %d, lost %d; receiver: %d displayed, loss %.3f",
		ss.Frames, ss.PacketsSent, len(ss.RTT), ss.Received, ss.Lost, rs.Displayed, rs.LossFraction)
	judged := cpuShareJudged(t)
	if judged && (rs.Displayed < ss.Frames*9/10 || ss.Received < ss.PacketsSent*9/10 || len(ss.RTT) < int(ss.Received)/2 || ss.Lost != 0) {
		t.Errorf("displayed %d of %d frames; sender: %d of %d packets reported received, %d RTT samples, %d lost",
			rs.Displayed, ss.Frames, ss.Received, ss.PacketsSent, len(ss.RTT), ss.Lost)
	}
	start := time.Now()
	cfg.RFC8888 = false
	_, _, err, _ = run(cfg, rcfg)
	if want := "video-send: receiver sends type-18 block feedback: run with --rfc8888"; err == nil || err.Error() != want {
		t.Errorf("video sender without --rfc8888 against a block receiver: %v; want %q", err, want)
	}
	if d := time.Since(start); judged && d > 4*time.Second {
		t.Errorf("took %v to notice, want < 4 s", d)
	}
}

// Random loss and reordering, in virtual time: whatever the order, once
// everything that arrived is reported the sender counts each delivered
// packet once as received and every other packet up to the highest
// delivered one as lost.
func TestBlockFeedbackRandomPath(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		rx := newBlockReceiver(25*time.Millisecond, 200) // small messages: many splits
		var tx blockSender
		type arrival struct {
			at  int64
			seq int32
		}
		var arrivals []arrival
		const n = 3000
		delivered, highest := 0, int32(0)
		for seq := int32(1); seq <= n; seq++ {
			at := int64(seq) * 300 // sent every 300 µs
			tx.sent(at, seq)
			if rng.Float64() < 0.1 {
				continue // lost
			}
			// 10 ms path, and one packet in five up to 20 ms late
			delay := int64(10000)
			if rng.IntN(5) == 0 {
				delay += rng.Int64N(20000)
			}
			arrivals = append(arrivals, arrival{at + delay, seq})
			delivered++
			highest = max(highest, seq)
		}
		slices.SortStableFunc(arrivals, func(a, b arrival) int { return int(a.at - b.at) })
		var msgs [][]byte
		send := func(p []byte) error { msgs = append(msgs, append([]byte(nil), p...)); return nil }
		for _, a := range arrivals {
			rx.arrived(a.at, a.seq, aqm.ECT1)
			if err := rx.flush(a.at, false, send); err != nil {
				t.Fatal(err)
			}
		}
		if err := rx.flush(arrivals[len(arrivals)-1].at+1, true, send); err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			a, err := wire.DecodeBlockACK(m, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := tx.report(2e6, a, n, func(int32) {}); !ok {
				t.Fatalf("seed %d: block at %d refused", seed, a.Begin)
			}
		}
		if int(tx.received) != delivered || tx.lastAck != highest || tx.received+tx.lost != highest {
			t.Errorf("seed %d: received %d of %d delivered, lost %d, last %d (highest delivered %d)",
				seed, tx.received, delivered, tx.lost, tx.lastAck, highest)
		}
	}
}

// A block frees the window of every packet it reports, received or lost,
// at once, as udp_prague's sender (inflight = sent − received − lost after
// each block's ACK step): 10 packets sent; a block reports 1..8 with 3
// missing (7 received, 1 lost), leaving 9 and 10 in flight; the next
// begins at 10, so 9 counts lost from the gap before it, and nothing is
// left in flight. A block that only re-reports packets counted already
// gives no RTT sample and no ACK step (udp_prague calls ACKReceived only
// when num_rtt > 0).
func TestBlockFreesWindow(t *testing.T) {
	tx, rx := udpPair(t, "127.0.0.1:0")
	cc, err := prague.New(prague.Config{FeedbackHold: 25000}, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newSender(tx, addrOf(rx), cc, "prague-send", "", time.Second, true, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 1400)
	for i := range 10 {
		if err := s.write(int64(i)*1000, wire.AppendData(buf[:0], s.dataHeader(int64(i)*1000))); err != nil {
			t.Fatal(err)
		}
	}
	if got := cc.Inflight(); got != 10 {
		t.Fatalf("in flight after 10 sent: %d", got)
	}
	got := func(r ...bool) []wire.BlockReport {
		var b []wire.BlockReport
		for _, ok := range r {
			if ok {
				b = append(b, wire.BlockReport{Received: true, ECN: aqm.ECT1, ATO: 5})
			} else {
				b = append(b, wire.BlockReport{})
			}
		}
		return b
	}
	steps := []struct {
		now      int64 // µs
		a        wire.BlockACK
		inflight int
		samples  int // RTT samples, all of them
		received int32
		lost     int32
	}{
		{40000, wire.BlockACK{Begin: 1, Reports: got(true, true, false, true, true, true, true, true)}, 2, 7, 7, 1},
		{41000, wire.BlockACK{Begin: 1, Reports: got(true, true)}, 2, 7, 7, 1},
		{65000, wire.BlockACK{Begin: 10, Reports: got(true)}, 0, 8, 8, 2},
	}
	for i, st := range steps {
		s.onBlock(st.now, st.now, st.a)
		if cc.Inflight() != st.inflight || len(s.rtt) != st.samples || s.fb.Received != st.received || s.fb.Lost != st.lost {
			t.Errorf("block %d: in flight %d, RTT samples %d, received %d, lost %d; want %d, %d, %d, %d",
				i+1, cc.Inflight(), len(s.rtt), s.fb.Received, s.fb.Lost, st.inflight, st.samples, st.received, st.lost)
		}
	}
}
