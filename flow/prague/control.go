package prague

import "github.com/pi2hop/pi2hop/aqm"

// ACK applies one ACK's feedback at time now (µs). Call RTT with the ACK's
// round-trip sample(s) first. The steps and their order are udp_prague's
// PragueCC::ACKReceived (prague_cc.cpp).
func (c *CC) ACK(now int64, fb Feedback) {
	if fb.Received < c.last.Received || (!c.classic && fb.CE < c.last.CE) {
		return // an older ACK overtaken by a newer one
	}
	if fb.ErrorL4S && c.ecn == aqm.ECT1 {
		// ECT(1) is bleached or re-marked on the path (RFC 9331 §4.3):
		// L4S treatment is not available, so behave classic for good.
		c.FallBack()
	}
	if c.classic {
		fb.CE = 0 // a loss-only response
	}
	srtt := float64(max(c.srtt, 1)) / 1e6 // s
	if c.state == StateInit {
		c.window = srtt * c.rate
		c.state = StateCA
	}
	// At tiny RTTs (or below one packet's pacing interval) the RTT is too
	// noisy to derive a rate from a window: control the rate itself. On the
	// way back, restart the window from the rate so that the rate holds.
	if c.srtt <= rateModeSRTT || srtt <= float64(c.pktSize)/c.rate {
		c.rateMode = true
	} else {
		if c.rateMode {
			c.window = srtt * c.rate
		}
		c.rateMode = false
	}

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

// FallBack makes the flow Not-ECT for good with a loss-only response:
// what a sender does once ECN validation fails (RFC 9000 §13.4.2) or the
// receiver reports error_L4S. CE counted from here on, which only a
// mangling path can produce for Not-ECT packets, is ignored.
func (c *CC) FallBack() {
	if c.classic {
		return
	}
	c.ecn = aqm.NotECT
	c.classic = true
	// The CE response reads increases of the receiver's CE count, which a
	// classic flow treats as zero: start the comparison from zero too, or
	// the next ACK would count every earlier mark as an unmarked packet.
	c.last.CE, c.alphaCE = 0, 0
}

// growthDelay is the number of vRTTs to wait after a CE reduction (and at
// the start) before the faster "new growth": 7, plus one per 1.92 MB/s
// (15.36 Mbit/s) of rate.
func growthDelay(rate float64) int64 { return minStep + int64(rate/rateStep) }

// updateAlpha folds the CE fraction of the last round into alpha, once per
// vRTT and only after a full window sent since the last update came back.
func (c *CC) updateAlpha(now int64, fb Feedback) {
	if fb.Received+fb.Lost <= c.alphaSent || now-c.alphaAt < c.vrtt {
		return
	}
	// udp_prague divides by the packets received since the last update
	// unguarded; a round of nothing but losses would divide by zero, so
	// such a round leaves alpha alone here.
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
	if (c.lostWindow > 0 || c.lostRate > 0) && fb.Lost <= c.lossLost {
		// The "lost" packets arrived late: give back what the cut took,
		// in the mode it took it, and the growth delay it added.
		c.rateMode = c.lostRateMode
		if c.rateMode {
			c.rate += c.lostRate
		} else {
			c.window += c.lostWindow
		}
		c.lostRate, c.lostWindow = 0, 0
		c.rttsToGrowth = max(0, c.rttsToGrowth-c.lostGrowth)
		c.lostGrowth = 0
		c.state = StateCA
	}
	if c.state == StateLoss && now-c.cutAt >= c.vrtt && fb.Received+fb.Lost > c.cutSent {
		c.state = StateCA // the undo information stays, for a late reordering
	}
	if fb.Lost <= c.last.Lost || c.state == StateLoss {
		return
	}
	// Wait the vRTTs a 25 ms Reno flow would take to regrow the halved
	// rate before growing faster again, in udp_prague's integer steps.
	g := int64(c.rate) / 2 / int64(c.mtu) * RefRTT / c.vrtt * RefRTT / 1e6
	c.lostGrowth = min(c.lostGrowth+g-c.rttsToGrowth, g)
	c.rttsToGrowth = g
	c.lostRateMode = c.rateMode
	if c.rateMode {
		c.lostRate = c.rate / 2
		c.rate -= c.lostRate
	} else {
		c.lostWindow = c.window / 2
		c.window -= c.lostWindow
	}
	c.lossLost = c.last.Lost
	c.state = StateLoss
	c.cutAt = now
	c.cutSent = c.sent
}

// increase grows the window (or rate) for the ACKed packets that were not
// CE-marked: per packet of the current size, inc·size/W·(srtt/vRTT)², so
// that d(rate)/dt = inc/vRTT² at any RTT, and every flow below 25 ms grows
// like a 25 ms Reno flow. inc is one MTU, or 1 ms of queue at the current
// rate once the growth delay has passed ("new growth").
func (c *CC) increase(fb Feedback) {
	acks := (fb.Received - c.last.Received) - (fb.CE - c.last.CE)
	if c.state == StateLoss || acks <= 0 {
		return
	}
	inc := c.mtu
	if g := c.rate * queueGrowth / 1e6; c.rttsToGrowth == 0 && g > c.mtu {
		inc = g
	}
	vrtt := float64(c.vrtt) / 1e6
	size := float64(c.pktSize)
	if c.rateMode {
		c.rate += float64(acks) * inc * size / (c.rate * vrtt * vrtt)
		return
	}
	ratio := float64(max(c.srtt, 1)) / float64(c.vrtt)
	c.window += float64(acks) * size * inc / c.window * ratio * ratio
}

// onCE reduces by alpha/2 when an ACK brings new CE marks, at most once
// per vRTT: a reduction holds until a vRTT has passed and the packets sent
// before it are accounted for. As in udp_prague, marks that come back
// during that time cause no later reduction of their own; alpha already
// counts them. With steady marking p the flow settles where one cut of
// rate·p/2 per vRTT balances one MTU of growth: rate = 2·MTU/(p·vRTT).
func (c *CC) onCE(now int64, fb Feedback) {
	if c.state == StateCWR && now-c.cutAt >= c.vrtt && fb.Received+fb.Lost > c.cutSent {
		c.state = StateCA
	}
	if c.state != StateCA || fb.CE <= c.last.CE {
		return
	}
	c.rttsToGrowth = growthDelay(c.rate) // from the rate before the cut, as udp_prague
	if c.rateMode {
		c.rate -= c.rate * c.alpha / 2
	} else {
		c.window -= c.window * c.alpha / 2
	}
	c.state = StateCWR
	c.cutAt = now
	c.cutSent = c.sent
}

// derive computes the packet size, burst and packet window from the rate
// and window, as udp_prague does after every ACK (integer bytes and
// packets, rounded down):
//
//	size   = rate·vRTT/2, within [150 B, MTU]   (at least two packets per vRTT)
//	burst  = max(1, rate·250 µs / size)
//	window = max(2, W·1.03/size + 1)            (room for the +3 % pacing phase)
//
// At 20 ms RTT (vRTT 25 ms) a flow uses full 1400 B packets from
// 2·1400 B / 25 ms = 112 kB/s (0.9 Mbit/s) up.
func (c *CC) derive() {
	c.pktSize = min(max(int(c.rate*float64(c.vrtt)/1e6/2), MinPacketSize), int(c.mtu))
	size := float64(c.pktSize)
	c.pktBurst = max(1, int(c.rate*BurstTime/1e6/size))
	// In rate mode the pacing rate governs and the window is only a safety
	// cap. Here we differ from udp_prague on purpose: its window of
	// rate·srtt at a sub-2 ms RTT is two packets, and any jitter in the
	// peer's ACKs (a Go receiver's scheduling, the hop's batches) would
	// throttle the flow below its rate. Allow one vRTT of data instead.
	inflight := c.window
	if c.rateMode {
		inflight = max(inflight, c.rate*float64(c.vrtt)/1e6)
	}
	// Block feedback reports a packet up to one period after it arrived,
	// so packets stay unreported for RTT + period; udp_prague's window
	// (rate·srtt) ignores the period, and at a 20 ms RTT with its 25 ms
	// period its --rfc8888 flow is window-limited well below its rate.
	// The window here covers the period too.
	inflight += c.rate * float64(c.hold) / 1e6
	c.pktWindow = max(minPktWindow, int(inflight*rateOffset/size)+1)
}
