package rtt

// TCP header flags.
const (
	tcpFIN = 0x01
	tcpSYN = 0x02
	tcpRST = 0x04
	tcpACK = 0x10
)

// parseTCP reads a TCP segment: h as far as captured (its header at
// least), n its length on the wire.
func (r *Record) parseTCP(h []byte, n int) {
	if len(h) < 20 {
		return
	}
	off := int(h[12]>>4) * 4
	if off < 20 || off > len(h) || off > n {
		return
	}
	r.kind = kindTCP
	orient(&r.key, be.Uint16(h[0:2]), be.Uint16(h[2:4]), r.dir)
	r.tsval, r.tsecr, r.hasTS = tcpTimestamps(h[20:off])
	r.flags = h[13]
	r.seq, r.ack = be.Uint32(h[4:8]), be.Uint32(h[8:12])
	r.end = r.seq + uint32(n-off)
	if r.flags&(tcpSYN|tcpFIN) != 0 {
		r.end++
	}
}

// tcp times a TCP segment. Its timestamps, if it has them, time the flow
// (RFC 7323 §4.3: the receiver echoes in TSecr the TSval of the segment
// its ACK answers); otherwise its sequence and acknowledgment numbers do.
// Both ways, data sent again (a retransmission) starts no sample, and an
// answer that covers retransmitted data gives none (Karn's rule).
func (t *Table) tcp(r *Record, now int64) {
	d := r.dir
	i := t.lookup(&r.key, now)
	f := &t.flows[i]
	f.lastSeen = now
	if f.method == MethodNone {
		f.method = MethodTCPSeq
		if r.hasTS {
			f.method = MethodTCPTimestamps
		}
	}
	if f.method == MethodTCPTimestamps && !r.hasTS && r.flags&tcpRST == 0 {
		f.declineTimestamps()
	}
	s, peer := &f.snd[d], &f.snd[1-d]
	newData, resent := s.sent(r.seq, r.end)
	if r.flags&tcpACK != 0 {
		karn := peer.acked(r.ack)
		switch {
		case f.method == MethodTCPTimestamps && r.hasTS:
			if r.tsecr != 0 && (!s.hasEcr || r.tsecr != s.lastEcr) {
				s.lastEcr, s.hasEcr = r.tsecr, true
				if at, ok := t.popExact(i, 1-d, r.tsecr); ok {
					t.answer(i, d, at, now, karn)
				}
			}
		case f.method == MethodTCPSeq:
			if at, ok := t.popCovered(i, 1-d, r.ack); ok {
				t.answer(i, d, at, now, karn)
			}
		}
	}
	switch {
	case resent:
		// A retransmission's answer may be the original's.
	case f.method == MethodTCPTimestamps && r.hasTS:
		if !s.hasTS || int32(r.tsval-s.lastTS) > 0 {
			s.lastTS, s.hasTS = r.tsval, true
			t.push(i, d, r.tsval, now)
		}
	case f.method == MethodTCPSeq && newData:
		t.push(i, d, r.end, now)
	}
}

// declineTimestamps times the flow by sequence numbers from now on.
// Timestamps are in use only when both SYNs carried them, and then every
// segment but a reset carries them (RFC 7323 §3.2): a segment without
// them says an end declined them (a first SYN offers them whatever the
// other end does), and what waits for an echo that will not come is
// forgotten.
func (f *flow) declineTimestamps() {
	f.method = MethodTCPSeq
	for d := range f.snd {
		s := &f.snd[d]
		s.n, s.skip, s.stride, s.hasTS, s.hasEcr = 0, 0, 0, false, false
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
