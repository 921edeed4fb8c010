package rtt

// TCP header flags.
const (
	tcpFIN = 0x01
	tcpSYN = 0x02
	tcpACK = 0x10
)

// tcp times a TCP segment. Its timestamps, if it has them, time the flow
// (RFC 7323 §4.3: the receiver echoes in TSecr the TSval of the segment
// its ACK answers); otherwise its sequence and acknowledgment numbers do.
// Both ways, data sent again (a retransmission) starts no sample, and an
// answer that covers retransmitted data gives none (Karn's rule).
// h is the segment as far as captured (its header at least), n its
// length on the wire.
func (t *Table) tcp(k *flowKey, h []byte, n int, d Dir, now int64) {
	if len(h) < 20 {
		t.st.Malformed++
		return
	}
	off := int(h[12]>>4) * 4
	if off < 20 || off > len(h) {
		t.st.Malformed++
		return
	}
	orient(k, be.Uint16(h[0:2]), be.Uint16(h[2:4]), d)
	i := t.lookup(k, now)
	f := &t.flows[i]
	f.lastSeen = now
	tsval, tsecr, hasTS := tcpTimestamps(h[20:off])
	if f.method == MethodNone {
		f.method = MethodTCPSeq
		if hasTS {
			f.method = MethodTCPTimestamps
		}
	}
	flags := h[13]
	seq, ack := be.Uint32(h[4:8]), be.Uint32(h[8:12])
	end := seq + uint32(n-off)
	if flags&(tcpSYN|tcpFIN) != 0 {
		end++
	}
	s, peer := &f.snd[d], &f.snd[1-d]
	newData, resent := s.sent(seq, end)
	if flags&tcpACK != 0 {
		karn := peer.acked(ack)
		switch {
		case f.method == MethodTCPTimestamps && hasTS:
			if tsecr != 0 && (!s.hasEcr || tsecr != s.lastEcr) {
				s.lastEcr, s.hasEcr = tsecr, true
				if at, ok := t.popExact(i, 1-d, tsecr); ok {
					t.answer(i, d, at, now, karn)
				}
			}
		case f.method == MethodTCPSeq:
			if at, ok := t.popCovered(i, 1-d, ack); ok {
				t.answer(i, d, at, now, karn)
			}
		}
	}
	switch {
	case resent:
		// A retransmission's answer may be the original's.
	case f.method == MethodTCPTimestamps && hasTS:
		if !s.hasTS || int32(tsval-s.lastTS) > 0 {
			s.lastTS, s.hasTS = tsval, true
			t.push(i, d, tsval, now)
		}
	case f.method == MethodTCPSeq && newData:
		t.push(i, d, end, now)
	}
}

// answer takes a sample of flow i unless its answer covered data sent
// again (karn).
func (t *Table) answer(i int, d Dir, at, now int64, karn bool) {
	if karn {
		t.flows[i].karn++
		return
	}
	t.sample(i, d, at, now)
}

// sent follows the sender's sequence space with a segment [seq, end):
// newData when it goes beyond anything sent before and starts at or after
// its end, resent when it carries data sent before (the retransmitted
// range is kept until acknowledged).
func (s *sender) sent(seq, end uint32) (newData, resent bool) {
	if end == seq {
		return false, false // a pure ACK
	}
	if !s.hasSeq {
		s.sndNxt, s.hasSeq = end, true
		return true, false
	}
	if int32(seq-s.sndNxt) >= 0 {
		s.sndNxt = end
		return true, false
	}
	if !s.retx {
		s.retxLow, s.retxHigh, s.retx = seq, end, true
	} else {
		if int32(seq-s.retxLow) < 0 {
			s.retxLow = seq
		}
		if int32(end-s.retxHigh) > 0 {
			s.retxHigh = end
		}
	}
	if int32(end-s.sndNxt) > 0 {
		s.sndNxt = end
	}
	return false, true
}

// acked takes an ACK of the sender's data up to ack and reports whether
// it covers retransmitted data; once all of that is acknowledged the
// sender's answers count again.
func (s *sender) acked(ack uint32) (karn bool) {
	if !s.retx || int32(ack-s.retxLow) <= 0 {
		return false
	}
	if int32(ack-s.retxHigh) >= 0 {
		s.retx = false
	}
	return true
}

// tcpTimestamps finds the timestamps option (RFC 7323 §3) among the
// options opts. Most stacks put it first after two NOPs, which is looked
// at before walking the list.
func tcpTimestamps(opts []byte) (tsval, tsecr uint32, ok bool) {
	if len(opts) >= 12 && be.Uint32(opts) == 0x0101080a {
		return be.Uint32(opts[4:]), be.Uint32(opts[8:]), true
	}
	for len(opts) > 0 {
		switch opts[0] {
		case 0: // end of options
			return 0, 0, false
		case 1: // NOP
			opts = opts[1:]
			continue
		}
		if len(opts) < 2 || opts[1] < 2 || int(opts[1]) > len(opts) {
			return 0, 0, false
		}
		if opts[0] == 8 && opts[1] == 10 {
			return be.Uint32(opts[2:]), be.Uint32(opts[6:]), true
		}
		opts = opts[opts[1]:]
	}
	return 0, 0, false
}
