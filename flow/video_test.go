package flow

import (
	"context"
	"math"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/flow/wire"
)

// runVideoOn runs VideoSend on tx against VideoRecv on rx and returns both
// summaries and errors.
func runVideoOn(tx, rx *net.UDPConn, scfg, rcfg VideoConfig) (VideoSenderSummary, VideoReceiverSummary, error, error) {
	return sendAndReceive(10*time.Second, 150*time.Millisecond,
		func(ctx context.Context) (VideoSenderSummary, error) {
			return VideoSend(ctx, tx, addrOf(rx), scfg, nil)
		},
		func(ctx context.Context) (VideoReceiverSummary, error) { return VideoRecv(ctx, rx, rcfg, nil) })
}

// A video call over loopback: about 30 fps displayed, no loss, no stalls,
// frame delay about the playout delay, per-ACK RTT samples at the sender.
func TestVideoLoopback(t *testing.T) {
	tx, rx := udpPair(t, "127.0.0.1:0")
	cfg := VideoConfig{Duration: 2500 * time.Millisecond, Interval: 500 * time.Millisecond, Seed: 1, Label: "call"}
	rcfg := cfg
	rcfg.Duration = 0
	ss, rs, err, rerr := runVideoOn(tx, rx, cfg, rcfg)
	if err != nil || rerr != nil {
		t.Fatalf("send: %v, recv: %v", err, rerr)
	}
	t.Logf("sender: %d frames (%d key), %d pkts, %d RTT samples, flushes %d, PLIs %d, targets %v",
		ss.Frames, ss.Keyframes, ss.PacketsSent, len(ss.RTT), ss.Flushes, ss.PLIs, ss.TargetBps)
	t.Logf("receiver: %d displayed, %d late, %d undecodable, fps %v, stalls %d, loss %.3f",
		rs.Displayed, rs.Late, rs.Undecodable, rs.FPS, len(rs.Stalls), rs.LossFraction)
	if !cpuShareJudged(t) {
		if len(rs.FrameDelay) != rs.Displayed || len(ss.RTT) != len(ss.RTTAt) {
			t.Errorf("%d frame delays for %d frames, %d RTT samples at %d times", len(rs.FrameDelay), rs.Displayed, len(ss.RTT), len(ss.RTTAt))
		}
		return
	}
	if ss.Frames < 70 || ss.Frames > 80 {
		t.Errorf("%d frames in 2.5 s at 30 fps", ss.Frames)
	}
	if ss.Keyframes < 2 {
		t.Errorf("%d keyframes: want the first and one after 2 s", ss.Keyframes)
	}
	// A loaded CI machine may stall the sender long enough for one flush
	// and a keyframe; anything more is a bug.
	if rs.Displayed < ss.Frames*9/10 || rs.Late+rs.Undecodable > ss.Frames/10 || ss.Flushes > 1 {
		t.Errorf("displayed %d of %d frames, late %d, undecodable %d, flushes %d", rs.Displayed, ss.Frames, rs.Late, rs.Undecodable, ss.Flushes)
	}
	if len(rs.FPS) < 2 {
		t.Fatalf("fps windows %v", rs.FPS)
	}
	sum := 0
	for _, f := range rs.FPS {
		sum += f
		if f > 31 {
			t.Errorf("fps windows %v: more than 30 frames in a second", rs.FPS)
		}
	}
	if mean := float64(sum) / float64(len(rs.FPS)); mean < 26 {
		t.Errorf("fps windows %v: mean %.1f, want about 30", rs.FPS, mean)
	}
	if len(rs.Stalls) > ss.Flushes || rs.LossFraction != 0 {
		t.Errorf("stalls %v, loss %.3f on loopback", rs.Stalls, rs.LossFraction)
	}
	if len(rs.FrameDelay) != rs.Displayed {
		t.Fatalf("%d frame delays for %d frames", len(rs.FrameDelay), rs.Displayed)
	}
	delays := slices.Clone(rs.FrameDelay)
	slices.Sort(delays)
	if d := figure.Quantile(delays, 0.5); d < 80*time.Millisecond || d > 100*time.Millisecond {
		t.Errorf("median frame delay %v, want the 80 ms playout delay", d)
	}
	if delays[0] < 80*time.Millisecond {
		t.Errorf("a frame was shown %v after capture, before the playout delay", delays[0])
	}
	if len(ss.RTT) < ss.Frames || ss.LossFraction != 0 {
		t.Errorf("%d RTT samples, loss %.3f", len(ss.RTT), ss.LossFraction)
	}
}

// frameInput is one packet fed to the tracker in the table tests.
type frameInput struct {
	frame  int32
	idx    uint16
	count  uint16
	key    bool
	at     int64 // µs after the frame's capture
	seq    int32
	decide int64 // when to call decide, µs since frame 1's capture (0: right after)
}

func TestFrameTracker(t *testing.T) {
	const period, playout = 33333, 80000
	type fate struct {
		nr   int32
		fate frameFate
	}
	tests := []struct {
		name    string
		packets []frameInput
		until   int64 // final decide time, µs since frame 1's capture
		want    []fate
	}{
		{"all complete", []frameInput{
			{frame: 1, idx: 0, count: 2, key: true, at: 1000, seq: 1}, {frame: 1, idx: 1, count: 2, key: true, at: 2000, seq: 2},
			{frame: 2, idx: 0, count: 1, at: 1000, seq: 3},
			{frame: 3, idx: 0, count: 1, at: 1000, seq: 4},
		}, 200000, []fate{{1, fateDisplayed}, {2, fateDisplayed}, {3, fateDisplayed}}},
		{"lost packet breaks the chain until a keyframe", []frameInput{
			{frame: 1, idx: 0, count: 1, key: true, at: 1000, seq: 1},
			{frame: 2, idx: 0, count: 2, at: 1000, seq: 2}, // idx 1 (seq 3) lost
			{frame: 3, idx: 0, count: 1, at: 1000, seq: 4},
			{frame: 4, idx: 0, count: 1, at: 1000, seq: 5},
			{frame: 5, idx: 0, count: 1, at: 1000, seq: 6},
			{frame: 6, idx: 0, count: 1, at: 1000, seq: 7},
			{frame: 7, idx: 0, count: 1, key: true, at: 1000, seq: 8},
		}, 300000, []fate{{1, fateDisplayed}, {2, fateUndecodable}, {3, fateUndecodable}, {4, fateUndecodable},
			{5, fateUndecodable}, {6, fateUndecodable}, {7, fateDisplayed}}},
		{"a complete keyframe settles an incomplete frame before it", []frameInput{
			{frame: 1, idx: 0, count: 1, key: true, at: 1000, seq: 1},
			{frame: 2, idx: 0, count: 3, at: 1000, seq: 2},
			{frame: 3, idx: 0, count: 1, key: true, at: 1000, seq: 5},
		}, 0, []fate{{1, fateDisplayed}, {2, fateUndecodable}, {3, fateDisplayed}}},
		{"a frame never seen is lost once later packets pass it", []frameInput{
			{frame: 1, idx: 0, count: 1, key: true, at: 1000, seq: 1},
			{frame: 3, idx: 0, count: 1, at: 1000, seq: 3},
			{frame: 4, idx: 0, count: 1, at: 1000, seq: 4},
			{frame: 5, idx: 0, count: 1, at: 1000, seq: 5},
			{frame: 6, idx: 0, count: 1, at: 1000, seq: 6},
		}, 0, []fate{{1, fateDisplayed}, {2, fateUndecodable}, {3, fateUndecodable}, {4, fateUndecodable},
			{5, fateUndecodable}, {6, fateUndecodable}}},
		{"late frame: not complete 400 ms after capture", []frameInput{
			{frame: 1, idx: 0, count: 1, key: true, at: 1000, seq: 1},
			{frame: 2, idx: 0, count: 2, at: 1000, seq: 2},
		}, 450000, []fate{{1, fateDisplayed}, {2, fateLate}}},
		{"complete but late", []frameInput{
			{frame: 1, idx: 0, count: 1, key: true, at: 420000, seq: 1},
		}, 500000, []fate{{1, fateLate}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const base = 1_700_000_000_000_000
			var got []fate
			var lastDisplay int64
			tr := newFrameTracker(period, playout, func(nr int32, f frameFate, key bool, at, captured int64) {
				got = append(got, fate{nr, f})
				if f == fateDisplayed {
					if at < captured+playout || at < lastDisplay {
						t.Errorf("frame %d displayed at %d, captured %d, previous display %d", nr, at, captured, lastDisplay)
					}
					lastDisplay = at
				}
			})
			for _, p := range tc.packets {
				ts := base + int64(p.frame-1)*period
				tr.packet(ts+p.at, wire.Data{RT: true, Seq: p.seq, FrameNr: p.frame},
					wire.Video{FrameTS: ts, Key: p.key, Count: p.count, Idx: p.idx})
				tr.decide(ts + p.at)
			}
			if tc.until > 0 {
				tr.decide(base + tc.until)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("fates %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("fates %v, want %v", got, tc.want)
					break
				}
			}
		})
	}
}

// TestFrameTrackerBogusFrameNumber: a frame number from the peer that runs
// further ahead than the time since the last packet allows is ignored in
// O(1): no frame is settled for the numbers it skips, and the call goes
// on. A real gap (the path dark for 10 s at 30 fps) is taken, and its
// lost frames settled.
func TestFrameTrackerBogusFrameNumber(t *testing.T) {
	const period, base = 33333, 1_700_000_000_000_000
	var settled int
	tr := newFrameTracker(period, 80000, func(int32, frameFate, bool, int64, int64) { settled++ })
	send := func(frame, seq int32, at int64) {
		ts := base + int64(frame-1)*period
		tr.packet(at, wire.Data{RT: true, Seq: seq, FrameNr: frame}, wire.Video{FrameTS: ts, Key: true, Count: 1})
		tr.decide(at)
	}
	for i := int32(1); i <= 30; i++ {
		send(i, i, base+int64(i-1)*period+1000)
	}
	now := int64(base + 30*period)
	// Allowed ahead of frame 30: (32 333 µs since the last packet + 1 s
	// of slack) / period + 1 = 31 frames. 33 ahead is bogus; MaxInt32 is
	// refused before the window is asked (not counted).
	for _, nr := range []int32{math.MaxInt32 - 1, math.MaxInt32, 30 + 33} {
		tr.packet(now, wire.Data{RT: true, Seq: 31, FrameNr: nr}, wire.Video{FrameTS: base, Key: true, Count: 1})
		tr.decide(now)
	}
	if tr.bogus != 2 || tr.maxFrame != 30 || settled != 30 {
		t.Errorf("after bogus frame numbers: %d ignored (want 2), newest frame %d (want 30), %d settled (want 30)", tr.bogus, tr.maxFrame, settled)
	}
	// 10 s later the sender is 300 frames on: plausible, taken.
	send(330, 31, now+10_000_000)
	if tr.maxFrame != 330 || settled != 330 {
		t.Errorf("after a 10 s gap: newest frame %d, %d settled; want 330 and 330", tr.maxFrame, settled)
	}
	// The first packet of a call may carry any number but MaxInt32.
	first := newFrameTracker(period, 80000, nil)
	first.packet(base, wire.Data{RT: true, Seq: 1, FrameNr: math.MaxInt32}, wire.Video{FrameTS: base, Count: 1})
	if first.next != 0 {
		t.Errorf("a first frame numbered MaxInt32 was taken (next %d)", first.next)
	}
}

func TestFreezeRule(t *testing.T) {
	// At 30 fps avg = 33.3 ms, so the threshold is max(100, 183.3) ms.
	tests := []struct {
		name   string
		gap    int64 // µs, after 40 regular frames
		stalls int
		gaps   int
	}{
		{"regular", 33333, 0, 0},
		{"150 ms: a >100 ms gap, no freeze", 150000, 0, 1},
		{"180 ms: below 183 ms", 180000, 0, 1},
		{"190 ms: freeze", 190000, 1, 1},
		{"1 s: freeze", 1000000, 1, 1},
	}
	for _, tc := range tests {
		f := freezeDetector{start: 1, nominal: 33333}
		at := int64(1)
		for i := 0; i < 40; i++ {
			f.display(at)
			at += 33333
		}
		at += tc.gap - 33333
		f.display(at)
		if len(f.stalls) != tc.stalls || f.gaps100ms != tc.gaps {
			t.Errorf("%s: %d stalls, %d gaps > 100 ms; want %d, %d", tc.name, len(f.stalls), f.gaps100ms, tc.stalls, tc.gaps)
		}
		if tc.stalls == 1 && f.total != time.Duration(tc.gap)*time.Microsecond {
			t.Errorf("%s: stall time %v, want %v", tc.name, f.total, time.Duration(tc.gap)*time.Microsecond)
		}
	}
	// Frozen until the end of the session, and never shown at all.
	f := freezeDetector{start: 1, nominal: 33333}
	f.display(1)
	f.display(33334)
	f.finish(1_000_000)
	if len(f.stalls) != 1 {
		t.Errorf("trailing freeze: %d stalls, want 1", len(f.stalls))
	}
	f = freezeDetector{start: 1, nominal: 33333}
	f.finish(2_000_001)
	if len(f.stalls) != 1 || f.total != 2*time.Second {
		t.Errorf("no frame at all: stalls %v, want one of 2 s", f.stalls)
	}
}

func TestFPSWindows(t *testing.T) {
	displays := []int64{0, 100, 999_999, 1_000_000, 2_500_000}
	got := fpsWindows(displays, 0, 2_600_000)
	if len(got) != 2 || got[0] != 3 || got[1] != 1 {
		t.Errorf("fpsWindows = %v, want [3 1] (partial third second left out)", got)
	}
}

// The video call validates ECN as the bulk sender does: through a relay
// that re-marks every packet ECT(0) the sender fails validation at once
// (re-marked) and goes on Not-ECT, and the call carries on.
func TestVideoValidation(t *testing.T) {
	tx, rx := udpPair(t, "127.0.0.1:0")
	front, back := udpPair(t, "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go relay(ctx, front, back, addrOf(rx), aqm.ECT0, 0)
	defer front.Close()
	defer back.Close()
	cfg := VideoConfig{Duration: 1500 * time.Millisecond, Seed: 1}
	rcfg := cfg
	rcfg.Duration = 0
	ss, rs, err, rerr := sendAndReceive(10*time.Second, 150*time.Millisecond,
		func(ctx context.Context) (VideoSenderSummary, error) {
			return VideoSend(ctx, tx, addrOf(front), cfg, nil)
		},
		func(ctx context.Context) (VideoReceiverSummary, error) { return VideoRecv(ctx, rx, rcfg, nil) })
	if err != nil || rerr != nil {
		t.Fatalf("send: %v, recv: %v", err, rerr)
	}
	v := ss.Validation
	t.Logf("sender: ECN %s, validation %s %q at %v; receiver: %d displayed of %d frames", ss.ECN, v.State, v.Failed, v.At, rs.Displayed, ss.Frames)
	if v.State != "failed" || v.Failed != "re-marked" || ss.ECN != "Not-ECT" || !ss.FellBack {
		t.Errorf("validation %s %q, ECN %s, fell back %v; want failed, re-marked, Not-ECT", v.State, v.Failed, ss.ECN, ss.FellBack)
	}
	if rs.Displayed < ss.Frames/2 {
		t.Errorf("displayed %d of %d frames after the fallback", rs.Displayed, ss.Frames)
	}
}
