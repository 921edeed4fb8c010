package flow

import (
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/flow/prague"
	"github.com/pi2hop/pi2hop/flow/wire"
)

// newTestSender is a sender to rx's address whose packets nobody reads:
// its feedback is handed to it by the test.
func newTestSender(t *testing.T, block, validate bool) *sender {
	t.Helper()
	tx, rx := udpPair(t, "127.0.0.1:0")
	cc, err := prague.New(prague.Config{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newSender(tx, addrOf(rx), cc, "prague-send", "", time.Second, block, validate, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Block feedback carries each packet's arrival codepoint, which are the
// counts: two packets sent ECT(1) reported arrived Not-ECT fail the
// validation at that block (bleached), and the next packet leaves
// Not-ECT; without validation the sender goes on with ECT(1).
func TestBlockFeedbackValidation(t *testing.T) {
	for _, validate := range []bool{true, false} {
		s := newTestSender(t, true, validate)
		buf := make([]byte, 0, 100)
		send := func(now int64) {
			if err := s.write(now, wire.AppendData(buf[:0], s.dataHeader(now))); err != nil {
				t.Fatal(err)
			}
		}
		send(0)
		send(1000)
		s.onBlock(30000, 30000, wire.BlockACK{Begin: 1, Reports: []wire.BlockReport{{Received: true, ECN: aqm.NotECT}, {Received: true, ECN: aqm.NotECT}}})
		send(31000)
		v := s.summary(40000).Validation
		if validate {
			if v.State != "failed" || v.Failed != "bleached" || v.At != 30*time.Millisecond || s.ecn != aqm.NotECT {
				t.Errorf("validation %s %q at %v, sending %v; want failed, bleached at 30ms, Not-ECT", v.State, v.Failed, v.At, s.ecn)
			}
		} else if v.State != "off" || v.Failed != "" || s.ecn != aqm.ECT1 {
			t.Errorf("without validation: %s %q, sending %v; want off, ECT(1)", v.State, v.Failed, s.ecn)
		}
	}
}

// The RTT's rise with no CE: an interval's median over the path's
// minimum, in intervals without a new CE mark while sending ECT(1). With
// 20 ms in the first interval and 32 ms in the second, both unmarked,
// the rise is 12 ms; a third interval at 45 ms that brings a CE mark
// does not count.
func TestRTTRiseWithoutCE(t *testing.T) {
	s := newTestSender(t, false, true)
	for i, iv := range []struct {
		rtt int64 // µs
		ce  int32 // CE count at the interval's end
	}{{20000, 0}, {32000, 0}, {45000, 1}} {
		now := int64(i+1) * 1e6
		for k := range 5 {
			s.sample(iv.rtt, iv.rtt, 0, now-int64(k)*1000)
		}
		s.fb.CE = iv.ce
		s.emit(now)
	}
	if got := s.summary(3e6).Validation.RTTRiseNoCE; got != 12*time.Millisecond {
		t.Errorf("RTT rise with no CE %v, want 12ms", got)
	}
}
