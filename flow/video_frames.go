package flow

import (
	"math"

	"github.com/pi2hop/pi2hop/flow/wire"
)

// Receiver-side frame rules (docs/design.md, the video call).
const (
	lateAfter    = 400_000 // µs after capture: a frame not complete by then is dropped
	reorderGrace = 3       // packets past a frame's last sequence number before it counts as lost
	// aheadSlack is how much more than the time since the last packet a
	// new frame number may run ahead of the newest (frames are numbered
	// one per period): queueing and jitter, well over lateAfter.
	aheadSlack = 1_000_000 // µs
)

// frameFate is how a frame ended at the receiver.
type frameFate uint8

const (
	fateDisplayed   frameFate = iota
	fateLate                  // not complete by capture + 400 ms
	fateUndecodable           // packets lost, or its reference was not decodable
)

// frameState is what the receiver knows of one frame.
type frameState struct {
	ts         int64 // capture time, Unix µs
	key        bool
	count      int
	got        int
	have       []uint64 // bitmap of packet indexes received
	firstSeq   int32    // sequence number of packet 0
	completeAt int64    // Unix µs, 0 while incomplete
}

// frameTracker decides each frame's fate in frame order: a frame is
// decodable if complete and either a keyframe or its predecessor was
// decodable; it is displayed at max(complete, capture + playout, previous
// display). Times are Unix µs (the sender stamps capture times with its
// Unix clock: the lab's namespaces share it; across machines it needs NTP).
type frameTracker struct {
	period  int64 // µs per frame
	playout int64 // µs

	frames   map[int32]*frameState
	next     int32 // next frame to decide; 0 before the first packet
	maxFrame int32
	maxSeq   int32
	keyDone  int32 // newest complete keyframe
	prevOK   bool  // the last decided frame was decodable
	lastAt   int64 // arrival of the last packet taken, Unix µs
	bogus    int   // packets whose frame number ran impossibly far ahead

	lastDisplay int64

	// decided is called for every frame in order, with its display time
	// (for displayed frames) and capture time.
	decided func(nr int32, fate frameFate, key bool, display, captured int64)
}

func newFrameTracker(period, playout int64, decided func(int32, frameFate, bool, int64, int64)) *frameTracker {
	return &frameTracker{period: period, playout: playout, frames: map[int32]*frameState{}, decided: decided}
}

// packet records one video packet that arrived at now.
func (t *frameTracker) packet(now int64, d wire.Data, v wire.Video) {
	if v.Count == 0 || v.Idx >= v.Count || d.FrameNr <= 0 || d.FrameNr == math.MaxInt32 {
		return // (MaxInt32: the frame after it would wrap)
	}
	if t.next == 0 {
		t.next, t.maxFrame = d.FrameNr, d.FrameNr
	}
	if d.FrameNr < t.next {
		return // its frame was already decided
	}
	// The sender numbers one frame per period, so a frame number can run
	// ahead of the newest one only as far as the time since the last
	// packet allows. Anything further is a bogus number from the peer:
	// taking it would make decide settle every frame up to it, a loop
	// (and callbacks) as long as the claim.
	if ahead := int64(d.FrameNr) - int64(t.maxFrame); ahead > 0 &&
		ahead > (max(now-t.lastAt, 0)+aheadSlack)/max(t.period, 1)+1 {
		t.bogus++
		return
	}
	t.lastAt = now
	t.maxSeq = max(t.maxSeq, d.Seq)
	t.maxFrame = max(t.maxFrame, d.FrameNr)
	f := t.frames[d.FrameNr]
	if f == nil {
		f = &frameState{ts: v.FrameTS, key: v.Key, count: int(v.Count), have: make([]uint64, (int(v.Count)+63)/64),
			firstSeq: d.Seq - int32(v.Idx)}
		t.frames[d.FrameNr] = f
	}
	if int(v.Idx) >= f.count || f.have[v.Idx/64]&(1<<(v.Idx%64)) != 0 {
		return // inconsistent or duplicate
	}
	f.have[v.Idx/64] |= 1 << (v.Idx % 64)
	f.got++
	if f.got == f.count {
		f.completeAt = now
		if f.key {
			t.keyDone = max(t.keyDone, d.FrameNr)
		}
	}
}

// decide settles every frame whose fate is known at now.
func (t *frameTracker) decide(now int64) {
	for t.next != 0 && t.next <= t.maxFrame {
		nr := t.next
		f := t.frames[nr]
		switch {
		case f != nil && f.completeAt != 0:
			switch {
			case f.completeAt-f.ts > lateAfter:
				t.settle(nr, f, fateLate, 0)
			case f.key || t.prevOK:
				at := max(f.completeAt, f.ts+t.playout, t.lastDisplay)
				t.lastDisplay = at
				t.settle(nr, f, fateDisplayed, at)
			default:
				t.settle(nr, f, fateUndecodable, 0)
			}
		case t.keyDone > nr:
			// A later keyframe is complete: the decoder jumps to it.
			t.settle(nr, f, fateUndecodable, 0)
		case t.maxSeq > t.lastSeq(nr, f)+reorderGrace:
			t.settle(nr, f, fateUndecodable, 0) // packets lost
		case now > t.captured(nr, f)+lateAfter:
			t.settle(nr, f, fateLate, 0)
		default:
			return // still arriving
		}
	}
}

func (t *frameTracker) settle(nr int32, f *frameState, fate frameFate, at int64) {
	t.prevOK = fate == fateDisplayed
	var key bool
	var ts int64
	if f != nil {
		key, ts = f.key, f.ts
	} else {
		ts = t.captured(nr, nil)
	}
	delete(t.frames, nr)
	t.next = nr + 1
	if t.decided != nil {
		t.decided(nr, fate, key, at, ts)
	}
}

// lastSeq returns the highest sequence number frame nr can have: from its
// own packets when any arrived, else just below the next known frame's.
func (t *frameTracker) lastSeq(nr int32, f *frameState) int32 {
	if f != nil {
		return f.firstSeq + int32(f.count) - 1
	}
	for m := nr + 1; m <= t.maxFrame; m++ {
		if g := t.frames[m]; g != nil {
			return g.firstSeq - 1
		}
	}
	return t.maxSeq
}

// captured returns frame nr's capture time, estimated from a later frame
// when none of its packets arrived.
func (t *frameTracker) captured(nr int32, f *frameState) int64 {
	if f != nil {
		return f.ts
	}
	for m := nr + 1; m <= t.maxFrame; m++ {
		if g := t.frames[m]; g != nil {
			return g.ts - int64(m-nr)*t.period
		}
	}
	return 0
}
