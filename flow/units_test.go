package flow

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/flow/prague"
	"github.com/pi2hop/pi2hop/flow/wire"
)

// The receiver's counters: gaps count as lost, a late packet takes one
// back, and any arrival other than ECT(1) or CE latches error_L4S.
func TestAckStateCounters(t *testing.T) {
	type step struct {
		seq            int32
		ecn            aqm.ECN
		recv, ce, lost int32
		errorL4S       bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"in order", []step{{1, aqm.ECT1, 1, 0, 0, false}, {2, aqm.CE, 2, 1, 0, false}, {3, aqm.ECT1, 3, 1, 0, false}}},
		{"gap then late arrival", []step{{1, aqm.ECT1, 1, 0, 0, false}, {4, aqm.ECT1, 2, 0, 2, false},
			{2, aqm.ECT1, 3, 0, 1, false}, {3, aqm.ECT1, 4, 0, 0, false}, {5, aqm.ECT1, 5, 0, 0, false}}},
		{"first packets lost", []step{{3, aqm.ECT1, 1, 0, 2, false}}},
		{"bleached", []step{{1, aqm.ECT1, 1, 0, 0, false}, {2, aqm.NotECT, 2, 0, 0, true}, {3, aqm.ECT1, 3, 0, 0, true}}},
		{"re-marked to ECT(0)", []step{{1, aqm.ECT0, 1, 0, 0, true}}},
		{"joining a running flow", []step{{5000, aqm.ECT1, 1, 0, 0, false}, {5002, aqm.ECT1, 2, 0, 1, false}}},
	}
	for _, tc := range tests {
		var a ackState
		for i, s := range tc.steps {
			ack := a.data(int64(1000*(i+1)), int64(1000*(i+1)), wire.Data{Seq: s.seq, TS: 77}, s.ecn, 100)
			if ack.AckSeq != s.seq || ack.Received != s.recv || ack.CE != s.ce || ack.Lost != s.lost || ack.ErrorL4S != s.errorL4S {
				t.Errorf("%s, step %d (seq %d): ACK %+v; want received %d, CE %d, lost %d, error_L4S %v",
					tc.name, i, s.seq, ack, s.recv, s.ce, s.lost, s.errorL4S)
			}
			if ack.EchoedTS != 77 { // echoed at once: no hold time
				t.Errorf("%s, step %d: echoed %d, want 77", tc.name, i, ack.EchoedTS)
			}
		}
	}
}

// newTestVideoSender builds a sender without a socket, for encode and pli.
func newTestVideoSender(t *testing.T, seed uint64, rate float64) *videoSender {
	t.Helper()
	cfg, _, err := VideoConfig{Seed: seed}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	cc, err := prague.New(prague.Config{MTU: videoMTU, FPS: cfg.FPS, MinRate: rate, MaxRate: rate}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &videoSender{sender: &sender{cc: cc}, cfg: cfg, rng: rand.New(rand.NewPCG(seed, 0x5eed)),
		period: 1_000_000 / int64(cfg.FPS), keyEvery: keyframeInterval(cfg), repayFrames: cfg.FPS / 2}
}

// Frames: on average R·T bytes with the Prague rate ×0.9 as R (keyframes
// included: the P-frames after one pay its extra back), keyframes at 4×
// the mean every 2 s, packets within 1200 bytes that add up to the frame.
func TestVideoEncode(t *testing.T) {
	const rate = 500_000.0 // bytes/s: 4 Mbit/s, target 3.6 Mbit/s
	mean := rate * targetShare / 30
	v := newTestVideoSender(t, 7, rate)
	var total float64
	var keys []int32
	for i := 0; i < 600; i++ { // 20 s
		now := int64(i) * v.period
		v.encode(now)
		frame := v.queue
		v.queue = nil
		size, seen := 0, map[uint16]bool{}
		for _, p := range frame {
			if p.frameNr != v.frameNr || int(p.count) != len(frame) || seen[p.idx] || int(p.offset) != size {
				t.Fatalf("frame %d: inconsistent packet %+v", v.frameNr, p)
			}
			seen[p.idx] = true
			size += p.data
			if n := videoHeader + p.data; n > videoMTU {
				t.Fatalf("packet of %d bytes", n)
			}
		}
		if size != int(frame[0].frameSize) {
			t.Fatalf("frame %d: packets carry %d bytes of %d", v.frameNr, size, frame[0].frameSize)
		}
		total += float64(size)
		if frame[0].key {
			keys = append(keys, v.frameNr)
			if math.Abs(float64(size)/mean-keyframeFactor) > 0.01 {
				t.Errorf("keyframe %d: %d bytes, want %.0f", v.frameNr, size, keyframeFactor*mean)
			}
		} else if float64(size) < mean*minFrameShare-1 {
			t.Errorf("P-frame %d: %d bytes, below the floor of %.0f", v.frameNr, size, mean*minFrameShare)
		}
	}
	if got := total / 600; math.Abs(got/mean-1) > 0.03 {
		t.Errorf("mean frame %.0f bytes, want %.0f ±3%%", got, mean)
	}
	if len(keys) != 10 || keys[0] != 1 || keys[1] != 61 {
		t.Errorf("keyframes %v, want 1, 61, 121, ... (every 2 s at 30 fps)", keys)
	}
	// Same seed, same sizes.
	a, b := newTestVideoSender(t, 3, rate), newTestVideoSender(t, 3, rate)
	for i := 0; i < 50; i++ {
		a.encode(int64(i) * a.period)
		b.encode(int64(i) * b.period)
	}
	if len(a.queue) != len(b.queue) || a.queue[len(a.queue)-1] != b.queue[len(b.queue)-1] {
		t.Error("the same seed gave different frames")
	}
}

func TestVideoPLIAndFlush(t *testing.T) {
	v := newTestVideoSender(t, 1, 500_000)
	v.encode(0) // keyframe 1
	v.queue = nil
	v.encode(v.period)
	v.pli(v.period, wire.PLI{FrameNr: 0}) // the receiver has not seen keyframe 1 yet: it is on its way
	if v.forceKey {
		t.Error("PLI older than the last keyframe forced another")
	}
	v.pli(v.period, wire.PLI{FrameNr: 2})
	if !v.forceKey || v.plis != 2 {
		t.Errorf("PLI after the last keyframe: forceKey %v, plis %d", v.forceKey, v.plis)
	}
	v.encode(2 * v.period)
	if last := v.queue[len(v.queue)-1]; !last.key || v.forceKey {
		t.Errorf("frame after a PLI: key %v, forceKey %v", last.key, v.forceKey)
	}
	// The queue now starts with P-frame 2: once it waited over 100 ms it is
	// flushed and a keyframe is due; the newest keyframe at the head is kept.
	v.flushStale(v.period + (100 * time.Millisecond).Microseconds())
	if v.flushes != 0 {
		t.Fatal("flushed a frame not yet 100 ms old")
	}
	v.flushStale(v.period + (100 * time.Millisecond).Microseconds() + 1)
	if v.flushes != 1 || len(v.queue) != 0 || !v.forceKey {
		t.Errorf("after 100 ms: flushes %d, queue %d, forceKey %v", v.flushes, len(v.queue), v.forceKey)
	}
	v.encode(10 * v.period) // the forced keyframe
	v.encode(11 * v.period) // and a P-frame behind it
	v.flushStale(20 * v.period)
	if v.flushes != 1 || len(v.queue) == 0 {
		t.Errorf("the newest keyframe was flushed: flushes %d, queue %d", v.flushes, len(v.queue))
	}
	// The keyframe goes out at 20 periods; the P-frame behind it gets its
	// 100 ms from then, not from its capture.
	for v.queue[0].frameNr == v.keyNr {
		v.queue = v.queue[1:]
	}
	v.keyDoneAt = 20 * v.period
	v.flushStale(20*v.period + (100 * time.Millisecond).Microseconds())
	if v.flushes != 1 {
		t.Errorf("a P-frame behind the keyframe was flushed before its 100 ms")
	}
	v.flushStale(20*v.period + (100 * time.Millisecond).Microseconds() + 1)
	if v.flushes != 2 {
		t.Errorf("a P-frame 100 ms behind the keyframe was not flushed")
	}
}
