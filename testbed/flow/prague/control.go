package prague

import "github.com/pi2hop/pi2hop/aqm"

// ACK applies one ACK's feedback at time now (µs). Call RTT with the ACK's
// round-trip sample first.
func (c *CC) ACK(now int64, fb Feedback) {
	if fb.Received < c.last.Received || (!c.classic && fb.CE < c.last.CE) {
		return // an older ACK overtaken by a newer one
	}
	if fb.ErrorL4S && c.ecn == aqm.ECT1 {
		// ECT(1) is bleached or re-marked on the path (RFC 9331 §4.3):
		// L4S treatment is not available, so behave classic for good.
		c.ecn = aqm.NotECT
	}
	if c.classic {
		fb.CE = 0 // a loss-only response
	}
	srtt := float64(max(c.srtt, 1)) / 1e6 // s
	if c.state == StateInit {
		c.window = srtt * c.rate
		c.state = StateCA
	}
	// At tiny RTTs the window is under a packet or two: control the rate.
	c.rateMode = c.srtt <= rateModeSRTT || srtt <= c.pktSize/c.rate

	c.updateAlpha(now, fb)
	c.onLoss(now, fb)
	c.increase(fb)
	c.onCE(now, fb)

	if !c.rateMode {
		c.rate = c.window / srtt
	}
	c.rate = min(max(c.rate, c.minRate), c.maxRate)
	c.window = c.rate * srtt
	c.last = fb
	c.derive()
}

// updateAlpha folds the CE fraction of the last round into alpha, once per
// vRTT and only after a full window sent since the last update came back.
func (c *CC) updateAlpha(now int64, fb Feedback) {
	if fb.Received+fb.Lost <= c.alphaSent || now-c.alphaAt < c.vrtt {
		return
	}
	if dr := fb.Received - c.alphaRecv; dr > 0 {
		p := float64(fb.CE-c.alphaCE) / float64(dr)
		c.alpha += (p - c.alpha) * c.gain
		c.alpha = min(max(c.alpha, 0), 1)
	}
	c.alphaAt = now
	c.alphaSent = c.sent
	c.alphaRecv, c.alphaCE = fb.Received, fb.CE
	if c.rttsToGrowth > 0 {
		c.rttsToGrowth--
	}
}

// onLoss undoes a loss cut that turned out to be reordering, leaves the
// loss state after a vRTT and a window, and halves on new loss (once per
// vRTT, like Reno: RFC 9331 §4.3 asks for a Reno-friendly loss response).
func (c *CC) onLoss(now int64, fb Feedback) {
	if c.state == StateLoss && c.undoValid && fb.Lost <= c.undoLost {
		// The "lost" packets arrived late: the cut was for nothing.
		c.rate, c.window, c.rttsToGrowth = c.undoRate, c.undoWindow, c.undoGrowth
		c.undoValid = false
		c.state = StateCA
		return
	}
	if c.state == StateLoss && now-c.cutAt >= c.vrtt && fb.Received+fb.Lost > c.cutSent {
		c.state = StateCA
		c.undoValid = false
	}
	if fb.Lost <= c.last.Lost || c.state == StateLoss {
		return
	}
	c.undoValid = true
	c.undoLost = c.last.Lost
	c.undoRate, c.undoWindow, c.undoGrowth = c.rate, c.window, c.rttsToGrowth
	if c.rateMode {
		c.rate -= c.rate / 2
	} else {
		c.window -= c.window / 2
	}
	// Like Reno, wait about as many RTTs as it takes to regrow half a
	// window before growing faster again.
	half := c.undoRate / 2
	c.rttsToGrowth = int64(half / c.mtu * (RefRTT / float64(c.vrtt)) * RefRTT / 1e6)
	c.state = StateLoss
	c.cutAt = now
	c.cutSent = c.sent
}

// increase grows the window (or rate) for the ACKed packets that were not
// CE-marked, so that d(rate)/dt = inc/vRTT² at any RTT below 25 ms.
func (c *CC) increase(fb Feedback) {
	acks := (fb.Received - c.last.Received) - (fb.CE - c.last.CE)
	if c.state == StateLoss || acks <= 0 {
		return
	}
	inc := c.mtu
	if g := c.rate * queueGrowth / 1e6; c.rttsToGrowth == 0 && g > c.mtu {
		inc = g // "new growth": probe with 1 ms of queue per RTT
	}
	vrtt := float64(c.vrtt) / 1e6
	if c.rateMode {
		c.rate += float64(acks) * inc * c.pktSize / (c.rate * vrtt * vrtt)
		return
	}
	ratio := float64(max(c.srtt, 1)) / float64(c.vrtt)
	c.window += float64(acks) * c.pktSize * inc / c.window * ratio * ratio
}

// onCE reduces by alpha/2 at most once per vRTT: a reduction holds until
// a vRTT has passed and the packets sent before it are accounted for.
// Marks that arrived meanwhile count toward the next reduction (as in
// DCTCP's once-per-window response), so with steady marking p the flow
// reduces once per vRTT and settles at rate = 2·MTU/(p·vRTT).
func (c *CC) onCE(now int64, fb Feedback) {
	switch c.state {
	case StateCA:
		c.ceRef = c.last.CE
	case StateCWR:
		if now-c.cutAt < c.vrtt || fb.Received+fb.Lost <= c.cutSent {
			return
		}
		c.state = StateCA
	default:
		return
	}
	if fb.CE <= c.ceRef {
		return
	}
	if c.rateMode {
		c.rate -= c.rate * c.alpha / 2
	} else {
		c.window -= c.window * c.alpha / 2
	}
	c.rttsToGrowth = minStep + int64(c.rate/rateStep)
	c.state = StateCWR
	c.ceRef = fb.CE
	c.cutAt = now
	c.cutSent = c.sent
}

// derive computes the packet size, burst and packet window from the rate
// and window.
func (c *CC) derive() {
	vrtt := float64(c.vrtt) / 1e6
	// At low rates shrink packets to keep at least two per vRTT
	// (l4s-endpoints.md §1.1).
	c.pktSize = min(max(c.rate*vrtt/2, MinPacketSize), c.mtu)
	if c.frameInterval == 0 {
		// Also keep one packet's serialisation at the flow's own rate (an
		// upper bound on it at any bottleneck the flow fills) to half the
		// L queue's 1 ms step (DualPI2's default step threshold): a full
		// MTU at 10 Mbit/s takes 1.14 ms, so one packet ahead already
		// exceeds the step, and each packet of the sawtooth's queue adds
		// that much delay. Measured through the hop at 10 Mbit/s: L
		// sojourn p99 2.49-2.62 -> 2.36 ms, utilisation 92-93 -> 94 %.
		// Frame mode keeps udp_prague's sizes: the video sender cuts its
		// frames by them, and small packets would multiply its headers.
		c.pktSize = min(max(c.rate*maxSerialisation/1e6, MinPacketSize), c.pktSize)
	}
	c.pktBurst = max(1, int(c.rate*BurstTime/1e6/c.pktSize))
	// In rate mode the pacing rate governs and the window is only a safety
	// cap: a window of rate·srtt at a sub-2 ms RTT would be two packets,
	// and any jitter in the peer's ACKs would throttle the flow. Allow one
	// vRTT of data instead.
	inflight := c.window
	if c.rateMode {
		inflight = max(inflight, c.rate*vrtt)
	}
	c.pktWindow = max(minPktWindow, int(inflight*rateOffset/c.pktSize)+1)
}
