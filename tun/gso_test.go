package tun

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
)

// refChecksum is RFC 1071 written out the slow way, word by word, for
// checking the fast sum: the ones' complement of the ones' complement sum
// of the 16-bit big-endian words of the parts, concatenated, an odd
// trailing byte padded with zero.
func refChecksum(parts ...[]byte) uint16 {
	var all []byte
	for _, p := range parts {
		all = append(all, p...)
	}
	if len(all)%2 == 1 {
		all = append(all, 0)
	}
	var s uint32
	for i := 0; i < len(all); i += 2 {
		s += uint32(all[i])<<8 | uint32(all[i+1])
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// refPseudo is the TCP/UDP pseudo-header as bytes (RFC 9293 §3.1, RFC 8200 §8.1).
func refPseudo(pkt []byte, proto uint8, l4len int) []byte {
	if pkt[0]>>4 == 4 {
		b := append([]byte{}, pkt[12:20]...)
		return append(b, 0, proto, byte(l4len>>8), byte(l4len))
	}
	b := append([]byte{}, pkt[8:40]...)
	return append(b, byte(l4len>>24), byte(l4len>>16), byte(l4len>>8), byte(l4len), 0, 0, 0, proto)
}

// refL4Checksum is what a segment's TCP/UDP checksum must be, computed
// from scratch with the field taken as zero (a zero result sent as ones).
func refL4Checksum(pkt []byte, l3 int, proto uint8, field int) uint16 {
	l4 := append([]byte{}, pkt[l3:]...)
	l4[field], l4[field+1] = 0, 0
	c := refChecksum(refPseudo(pkt, proto, len(l4)), l4)
	if c == 0 {
		c = 0xffff
	}
	return c
}

func TestSumMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 300; n++ {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if got, want := ^fold(sum(b, 0)), refChecksum(b); got != want {
			t.Fatalf("len %d: checksum %#04x, want %#04x", n, got, want)
		}
	}
	all := bytes.Repeat([]byte{0xff}, 4096) // every add carries
	if got, want := ^fold(sum(all, 0xffffffffffffffff)), refChecksum(all); got != want {
		t.Errorf("all ones: %#04x, want %#04x", got, want)
	}
}

// flow describes a crafted TCP or UDP flow.
type flow struct {
	v6, udp bool
	tos     uint8  // ToS / Traffic Class
	opts    int    // TCP option bytes (a multiple of 4)
	flags   uint8  // TCP flags of the super-packet
	seq     uint32 // TCP
	id      uint16 // IPv4
}

func (f flow) l3() int { return map[bool]int{false: 20, true: 40}[f.v6] }
func (f flow) hl() int {
	if f.udp {
		return f.l3() + 8
	}
	return f.l3() + 20 + f.opts
}

// packet builds one packet of f with payload p and a complete checksum
// (partial: the pseudo-header sum, as the kernel leaves it for offload).
func (f flow) packet(p []byte, partial bool) []byte {
	l3, hl := f.l3(), f.hl()
	b := make([]byte, hl+len(p))
	copy(b[hl:], p)
	proto := uint8(protoTCP)
	if f.udp {
		proto = protoUDP
	}
	if f.v6 {
		b[0] = 0x60 | f.tos>>4
		b[1] = f.tos<<4 | 0x0a // flow label 0xa1234
		b[2], b[3] = 0x12, 0x34
		binary.BigEndian.PutUint16(b[4:], uint16(len(b)-40))
		b[6], b[7] = proto, 64
		copy(b[8:], []byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
		copy(b[24:], []byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2})
	} else {
		b[0], b[1] = 0x45, f.tos
		binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
		binary.BigEndian.PutUint16(b[4:], f.id)
		b[6], b[8], b[9] = 0x40, 64, proto // DF
		copy(b[12:], []byte{10, 9, 0, 1, 10, 9, 0, 2})
		binary.BigEndian.PutUint16(b[10:], refChecksum(b[:20]))
	}
	l4 := b[l3:]
	binary.BigEndian.PutUint16(l4[0:], 40000)
	binary.BigEndian.PutUint16(l4[2:], 5201)
	field := 6
	if f.udp {
		binary.BigEndian.PutUint16(l4[4:], uint16(len(l4)))
	} else {
		field = 16
		binary.BigEndian.PutUint32(l4[4:], f.seq)
		binary.BigEndian.PutUint32(l4[8:], 0x01020304)
		l4[12] = byte((20+f.opts)/4) << 4
		l4[13] = f.flags
		binary.BigEndian.PutUint16(l4[14:], 512)
		for i := 0; i < f.opts; i++ {
			l4[20+i] = byte(i + 1)
		}
	}
	if partial {
		// ~pseudo folded, complemented back: the field holds the pseudo sum.
		binary.BigEndian.PutUint16(l4[field:], ^refChecksum(refPseudo(b, proto, len(l4))))
	} else {
		binary.BigEndian.PutUint16(l4[field:], refL4Checksum(b, l3, proto, field))
	}
	return b
}

func (f flow) vnet(gso int) vnetHdr {
	h := vnetHdr{flags: vnetNeedsCsum, gsoSize: uint16(gso), csumStart: uint16(f.l3()), hdrLen: uint16(f.hl())}
	switch {
	case f.udp:
		h.gsoType, h.csumOffset = gsoUDPL4, 6
	case f.v6:
		h.gsoType, h.csumOffset = gsoTCPv6, 16
	default:
		h.gsoType, h.csumOffset = gsoTCPv4, 16
	}
	return h
}

func payload(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return p
}

// splitAll cuts a super-packet into fresh buffers of size bufLen.
func splitAll(t *testing.T, h vnetHdr, pkt []byte, bufLen int) [][]byte {
	t.Helper()
	var s splitter
	if r := s.start(&h, pkt); r != dropNone {
		t.Fatalf("start: dropped (%d)", r)
	}
	var segs [][]byte
	for s.pending() {
		b := make([]byte, bufLen)
		n, r := s.next(b, false)
		if r != dropNone {
			t.Fatalf("segment %d: dropped (%d)", len(segs), r)
		}
		segs = append(segs, b[:n])
	}
	return segs
}

// checkSegments verifies each segment against the super-packet it came
// from, field by field, checksums from scratch.
func checkSegments(t *testing.T, f flow, super []byte, gso int, segs [][]byte) {
	t.Helper()
	l3, hl := f.l3(), f.hl()
	pay := super[hl:]
	if want := (len(pay) + gso - 1) / gso; len(segs) != want {
		t.Fatalf("%d segments, want %d", len(segs), want)
	}
	for k, s := range segs {
		lo, hi := k*gso, min((k+1)*gso, len(pay))
		last := k == len(segs)-1
		if len(s) != hl+hi-lo || !bytes.Equal(s[hl:], pay[lo:hi]) {
			t.Fatalf("segment %d: %d bytes, payload [%d:%d] of the super-packet expected", k, len(s), lo, hi)
		}
		if f.v6 {
			if got := int(binary.BigEndian.Uint16(s[4:])); got != len(s)-40 {
				t.Errorf("segment %d: payload length %d, want %d", k, got, len(s)-40)
			}
			if !bytes.Equal(s[:4], super[:4]) || !bytes.Equal(s[6:40], super[6:40]) {
				t.Errorf("segment %d: IPv6 header differs beyond the length", k)
			}
		} else {
			if got := int(binary.BigEndian.Uint16(s[2:])); got != len(s) {
				t.Errorf("segment %d: total length %d, want %d", k, got, len(s))
			}
			if got, want := binary.BigEndian.Uint16(s[4:]), f.id+uint16(k); got != want {
				t.Errorf("segment %d: ID %d, want %d", k, got, want)
			}
			if refChecksum(s[:20]) != 0 {
				t.Errorf("segment %d: IPv4 header checksum %#04x does not verify", k, binary.BigEndian.Uint16(s[10:]))
			}
			if s[1] != f.tos || s[8] != 64 || s[6] != 0x40 {
				t.Errorf("segment %d: ToS/TTL/flags changed", k)
			}
		}
		l4 := s[l3:]
		if f.udp {
			if got := int(binary.BigEndian.Uint16(l4[4:])); got != len(l4) {
				t.Errorf("segment %d: UDP length %d, want %d", k, got, len(l4))
			}
			if got, want := binary.BigEndian.Uint16(l4[6:]), refL4Checksum(s, l3, protoUDP, 6); got != want {
				t.Errorf("segment %d: UDP checksum %#04x, want %#04x", k, got, want)
			}
			continue
		}
		if got, want := binary.BigEndian.Uint32(l4[4:]), f.seq+uint32(lo); got != want {
			t.Errorf("segment %d: seq %d, want %d", k, got, want)
		}
		wantFlags := f.flags
		if !last {
			wantFlags &^= tcpFIN | tcpPSH
		}
		if k > 0 {
			wantFlags &^= tcpCWR
		}
		if l4[13] != wantFlags {
			t.Errorf("segment %d: flags %#02x, want %#02x", k, l4[13], wantFlags)
		}
		if !bytes.Equal(l4[20:20+f.opts], super[l3+20:l3+20+f.opts]) || !bytes.Equal(l4[8:13], super[l3+8:l3+13]) {
			t.Errorf("segment %d: ack/offset/options changed", k)
		}
		if got, want := binary.BigEndian.Uint16(l4[16:]), refL4Checksum(s, l3, protoTCP, 16); got != want {
			t.Errorf("segment %d: TCP checksum %#04x, want %#04x", k, got, want)
		}
	}
}

// assemble is what the kernel receives for one write: the vnet header and
// either the packet or the super-packet's headers and every payload.
func assemble(c *coalescer, pkts [][]byte) (vnetHdr, []byte, int) {
	n, hl := c.run(pkts, nil)
	var h vnetHdr
	if n == 1 {
		return h, append([]byte{}, pkts[0]...), 1
	}
	h.decode(c.vh[:])
	b := append([]byte{}, c.hdr[:hl]...)
	for _, p := range pkts[:n] {
		b = append(b, p[hl:]...)
	}
	return h, b, n
}

var allKinds = coalescer{tcp4: true, tcp6: true, udp4: true, udp6: true}

var testFlows = []struct {
	name string
	f    flow
}{
	{"tcp4", flow{flags: tcpACK | tcpPSH, seq: 0xfffff000, id: 0xfff0, tos: 0x01}}, // seq and ID wrap
	{"tcp4-opts", flow{flags: tcpACK | tcpPSH, seq: 1000, id: 7, opts: 12, tos: 0x02}},
	{"tcp4-fin-cwr", flow{flags: tcpACK | tcpPSH | tcpFIN | tcpCWR, seq: 5, id: 9}},
	{"tcp6", flow{v6: true, flags: tcpACK | tcpPSH, seq: 77, opts: 12, tos: 0x01}},
	{"udp4", flow{udp: true, id: 300, tos: 0x01}},
	{"udp6", flow{v6: true, udp: true, tos: 0x02}},
}

func TestSplitCoalesceRoundTrip(t *testing.T) {
	for _, tc := range testFlows {
		for _, size := range []struct{ payload, gso int }{{1, 1448}, {1448, 1448}, {1449, 1448}, {62000, 1448}, {64000, 1000}, {5000, 1}} {
			t.Run(fmt.Sprintf("%s/%d-by-%d", tc.name, size.payload, size.gso), func(t *testing.T) {
				f := tc.f
				gso := size.gso
				if f.udp && gso > 1472-8 {
					gso = 1400
				}
				super := f.packet(payload(size.payload, uint64(size.payload)), true)
				segs := splitAll(t, f.vnet(gso), super, 1536)
				checkSegments(t, f, super, gso, segs)

				// Written back, the segments go out as super-packets whose
				// split gives back exactly the same segments.
				var again [][]byte
				for rest := segs; len(rest) > 0; {
					h, b, n := assemble(&allKinds, rest)
					if n == 1 {
						again = append(again, b)
					} else {
						if fin := f.flags & (tcpFIN | tcpCWR); !f.udp && fin != 0 && (rest[0][f.l3()+13]&fin != 0 || n == len(rest)) {
							t.Fatalf("a segment with FIN or CWR was coalesced")
						}
						again = append(again, splitAll(t, h, b, 1536)...)
					}
					rest = rest[n:]
				}
				if len(again) != len(segs) {
					t.Fatalf("round trip gave %d segments, want %d", len(again), len(segs))
				}
				for k := range segs {
					if !bytes.Equal(again[k], segs[k]) {
						t.Fatalf("segment %d changed in the round trip:\n got %x\nwant %x", k, again[k][:f.hl()], segs[k][:f.hl()])
					}
				}
			})
		}
	}
}

// setCE marks pkt CE and fixes the IPv4 header checksum.
func setCE(pkt []byte) {
	if pkt[0]>>4 == 6 {
		pkt[1] |= 0x30
		return
	}
	pkt[1] |= 3
	pkt[10], pkt[11] = 0, 0
	binary.BigEndian.PutUint16(pkt[10:], refChecksum(pkt[:20]))
}

func ecn(pkt []byte) uint8 {
	if pkt[0]>>4 == 6 {
		return pkt[1] >> 4 & 3
	}
	return pkt[1] & 3
}

// A CE mark on one segment neither spreads to the segments around it nor
// disappears into them: the runs break at it, and every packet the kernel
// gets back carries its own ECN field.
func TestCoalesceKeepsCEApart(t *testing.T) {
	for _, tc := range testFlows {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			f.flags &^= tcpFIN | tcpCWR
			super := f.packet(payload(20*1000, 3), true)
			segs := splitAll(t, f.vnet(1000), super, 1536)
			marked := map[int]bool{0: true, 5: true, 6: true, 13: true, 19: true}
			for k := range marked {
				setCE(segs[k])
			}
			var runs []int
			k := 0
			for rest := segs; len(rest) > 0; {
				h, b, n := assemble(&allKinds, rest)
				out := [][]byte{b}
				if n > 1 {
					out = splitAll(t, h, b, 1536)
				}
				for _, o := range out {
					if got, want := ecn(o) == 3, marked[k]; got != want {
						t.Errorf("segment %d: CE %v after coalescing, want %v", k, got, want)
					}
					if !bytes.Equal(o, segs[k]) {
						t.Errorf("segment %d changed", k)
					}
					k++
				}
				runs = append(runs, n)
				rest = rest[n:]
			}
			// Runs break wherever the ECN field changes: [0] [1..4] [5 6]
			// (both CE: joined, each still CE) [7..12] [13] [14..18] [19].
			want := []int{1, 4, 2, 6, 1, 5, 1}
			if fmt.Sprint(runs) != fmt.Sprint(want) {
				t.Errorf("runs %v, want %v", runs, want)
			}
		})
	}
}

// Packets that must not be joined to the one before them.
func TestCoalesceRefuses(t *testing.T) {
	base := flow{flags: tcpACK, seq: 100, id: 1}
	mk := func(f flow, k int, change func(p []byte)) []byte {
		f.seq += uint32(k * 1000)
		f.id += uint16(k)
		p := f.packet(payload(1000, uint64(k)), false)
		if change != nil {
			change(p)
		}
		return p
	}
	fix4 := func(p []byte) {
		p[10], p[11] = 0, 0
		binary.BigEndian.PutUint16(p[10:], refChecksum(p[:20]))
		p[36], p[37] = 0, 0
		binary.BigEndian.PutUint16(p[36:], refL4Checksum(p, 20, protoTCP, 16))
	}
	for _, tc := range []struct {
		name   string
		f      flow
		change func(p []byte) // applied to the second packet
	}{
		{"corrupt checksum", base, func(p []byte) { p[len(p)-1] ^= 1 }},
		{"seq gap", base, func(p []byte) { binary.BigEndian.PutUint32(p[24:], 100+1001); fix4(p) }},
		{"TTL", base, func(p []byte) { p[8]--; fix4(p) }},
		{"ToS", base, func(p []byte) { p[1] |= 1; fix4(p) }},
		{"ID not consecutive", base, func(p []byte) { p[5] += 2; fix4(p) }},
		{"ack", base, func(p []byte) { p[31]++; fix4(p) }},
		{"window", base, func(p []byte) { p[35]++; fix4(p) }},
		{"CWR", base, func(p []byte) { p[33] |= tcpCWR; fix4(p) }},
		{"ECE on one only", base, func(p []byte) { p[33] |= tcpECE; fix4(p) }},
		{"larger payload", base, func(p []byte) {}}, // built below with a longer first-after
		{"flow label", flow{v6: true, flags: tcpACK, seq: 100}, func(p []byte) {
			p[3]++
		}},
		{"after PSH", flow{flags: tcpACK | tcpPSH, seq: 100, id: 1}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := mk(tc.f, 0, nil), mk(tc.f, 1, tc.change)
			if tc.name == "larger payload" {
				a = tc.f.packet(payload(900, 0), false)
				f := tc.f
				f.seq, f.id = 100+900, 2
				b = f.packet(payload(1000, 1), false)
			}
			c := allKinds
			if n, _ := c.run([][]byte{a, b}, nil); n != 1 {
				t.Errorf("coalesced %d packets, want them written one by one", n)
			}
		})
	}
	// And the same pair unchanged is joined, or the cases above prove nothing.
	c := allKinds
	if n, _ := c.run([][]byte{mk(base, 0, nil), mk(base, 1, nil)}, nil); n != 2 {
		t.Errorf("two adjacent segments: run of %d, want 2", n)
	}
	// Offloads the kernel refused are never used.
	none := coalescer{}
	if n, _ := none.run([][]byte{mk(base, 0, nil), mk(base, 1, nil)}, nil); n != 1 {
		t.Errorf("without TSO4: run of %d, want 1", n)
	}
}

func TestCompleteChecksum(t *testing.T) {
	for _, tc := range testFlows {
		f := tc.f
		p := f.packet(payload(1200, 9), true)
		h := f.vnet(0)
		h.gsoType = gsoNone
		if r := completeChecksum(&h, p); r != dropNone {
			t.Fatalf("%s: dropped (%d)", tc.name, r)
		}
		if want := f.packet(payload(1200, 9), false); !bytes.Equal(p, want) {
			t.Errorf("%s: completed checksum %x, want %x", tc.name, p[int(h.csumStart+h.csumOffset):][:2], want[int(h.csumStart+h.csumOffset):][:2])
		}
	}
}

func TestSplitDropsInconsistentHeaders(t *testing.T) {
	f := flow{flags: tcpACK, seq: 1, id: 1}
	good := func() (vnetHdr, []byte) { return f.vnet(1000), f.packet(payload(3000, 1), true) }
	for _, tc := range []struct {
		name   string
		change func(h *vnetHdr, p []byte) []byte
		want   dropReason
	}{
		{"no NEEDS_CSUM", func(h *vnetHdr, p []byte) []byte { h.flags = 0; return p }, dropVnet},
		{"UFO", func(h *vnetHdr, p []byte) []byte { h.gsoType = gsoUDP; return p }, dropVnet},
		{"TCPv6 type on IPv4", func(h *vnetHdr, p []byte) []byte { h.gsoType = gsoTCPv6; return p }, dropHeaders},
		{"csum_start", func(h *vnetHdr, p []byte) []byte { h.csumStart = 24; return p }, dropVnet},
		{"csum_offset", func(h *vnetHdr, p []byte) []byte { h.csumOffset = 6; return p }, dropVnet},
		{"gso_size 0", func(h *vnetHdr, p []byte) []byte { h.gsoSize = 0; return p }, dropGSOSize},
		{"no payload", func(h *vnetHdr, p []byte) []byte {
			p = p[:40]
			binary.BigEndian.PutUint16(p[2:], 40)
			return p
		}, dropGSOSize},
		{"total length", func(h *vnetHdr, p []byte) []byte { return p[:len(p)-1] }, dropHeaders},
		{"fragment", func(h *vnetHdr, p []byte) []byte { p[6] |= 0x20; return p }, dropHeaders},
		{"protocol", func(h *vnetHdr, p []byte) []byte { p[9] = protoUDP; return p }, dropHeaders},
		{"TCP data offset", func(h *vnetHdr, p []byte) []byte { p[32] = 0x40; return p }, dropHeaders},
		{"short", func(h *vnetHdr, p []byte) []byte { return p[:19] }, dropHeaders},
	} {
		h, p := good()
		p = tc.change(&h, p)
		var s splitter
		if got := s.start(&h, p); got != tc.want || (got != dropNone) == s.pending() {
			t.Errorf("%s: start = %d (pending %v), want %d", tc.name, got, s.pending(), tc.want)
		}
	}
	// A segment larger than the buffer abandons the super-packet.
	h, p := good()
	var s splitter
	if s.start(&h, p) != dropNone {
		t.Fatal("good packet refused")
	}
	if _, r := s.next(make([]byte, 1000), false); r != dropTooBig || s.pending() {
		t.Errorf("segment into a short buffer: %d, pending %v; want dropTooBig, nothing pending", r, s.pending())
	}
}

// Splitting and coalescing allocate nothing.
func TestSplitCoalesceAllocatesNothing(t *testing.T) {
	f := flow{flags: tcpACK | tcpPSH, seq: 1, id: 1}
	super := f.packet(payload(60000, 1), true)
	h := f.vnet(1448)
	bufs := make([][]byte, 64)
	for i := range bufs {
		bufs[i] = make([]byte, 1536)
	}
	pkts := make([][]byte, 64)
	c := allKinds
	var s splitter
	allocs := testing.AllocsPerRun(100, func() {
		s.start(&h, super)
		n := 0
		for s.pending() {
			m, _ := s.next(bufs[n], false)
			pkts[n] = bufs[n][:m]
			n++
		}
		for rest := pkts[:n]; len(rest) > 0; {
			k, _ := c.run(rest, nil)
			rest = rest[k:]
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per split and coalesce, want 0", allocs)
	}
}

// FuzzSplit feeds arbitrary vnet headers and packets to the read path's
// pure part: it must never panic, every drop has a reason, and whatever it
// does emit is a packet that fits its buffer with a checksum that verifies.
func FuzzSplit(f *testing.F) {
	for _, tc := range testFlows {
		super := tc.f.packet(payload(3000, 1), true)
		h := tc.f.vnet(1000)
		var vh [vnetHdrLen]byte
		h.encode(vh[:])
		f.Add(append(vh[:], super...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < vnetHdrLen {
			return
		}
		var h vnetHdr
		h.decode(data)
		pkt := append([]byte{}, data[vnetHdrLen:]...)
		var st OffloadStats
		if h.gsoType == gsoNone {
			if h.flags&vnetNeedsCsum != 0 {
				if r := completeChecksum(&h, pkt); r != dropNone {
					st.drop(r)
				}
			}
			return
		}
		var s splitter
		if r := s.start(&h, pkt); r != dropNone {
			st.drop(r)
			if st.Dropped() != 1 || s.pending() {
				t.Fatalf("drop %d counted %d times, pending %v", r, st.Dropped(), s.pending())
			}
			return
		}
		out := make([]byte, 1536)
		l3 := 20
		if pkt[0]>>4 == 6 {
			l3 = 40
		}
		for segs := 0; s.pending(); segs++ {
			n, r := s.next(out, false)
			if r != dropNone {
				if r != dropTooBig || s.pending() {
					t.Fatalf("segment %d: drop %d, pending %v", segs, r, s.pending())
				}
				return
			}
			seg := out[:n]
			proto := pkt[9]
			if l3 == 40 {
				proto = pkt[6]
			} else {
				l3 = int(pkt[0]&0xf) * 4
				if refChecksum(seg[:l3]) != 0 {
					t.Fatalf("segment %d: IPv4 header checksum does not verify", segs)
				}
			}
			if refChecksum(refPseudo(seg, proto, n-l3), seg[l3:]) != 0 {
				t.Fatalf("segment %d: L4 checksum does not verify", segs)
			}
		}
	})
}

// Segments left partial carry, in the checksum field, the pseudo-header
// sum of their own length (what the kernel puts there for
// CHECKSUM_PARTIAL); completed, each is byte for byte the segment split in
// full. Coalesced with their flags, they make the same super-packets as
// the full ones without being verified (a partial field never verifies),
// and alone they go out with NEEDS_CSUM from the L4 header.
func TestSplitPartialCompletes(t *testing.T) {
	for _, tc := range testFlows {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			f.flags &^= tcpFIN | tcpCWR
			gso := 1400
			super := f.packet(payload(20000, 3), true)
			full := splitAll(t, f.vnet(gso), super, 1536)
			h := f.vnet(gso)
			var s splitter
			if r := s.start(&h, super); r != dropNone {
				t.Fatalf("start: dropped (%d)", r)
			}
			proto, field := uint8(protoTCP), f.l3()+16
			if f.udp {
				proto, field = protoUDP, f.l3()+6
			}
			var segs [][]byte
			for s.pending() {
				b := make([]byte, 1536)
				n, r := s.next(b, true)
				if r != dropNone {
					t.Fatalf("segment %d: dropped (%d)", len(segs), r)
				}
				seg := b[:n]
				if got, want := binary.BigEndian.Uint16(seg[field:]), ^refChecksum(refPseudo(seg, proto, n-f.l3())); got != want {
					t.Fatalf("segment %d: partial field %#04x, want the pseudo-header sum %#04x", len(segs), got, want)
				}
				segs = append(segs, seg)
			}
			if len(segs) != len(full) {
				t.Fatalf("%d partial segments, %d full", len(segs), len(full))
			}
			partial := make([]bool, len(segs))
			for i := range partial {
				partial[i] = true
			}
			c := allKinds
			nFull, _ := c.run(full, nil)
			fullHdr := append([]byte{}, c.hdr[:f.hl()]...)
			nPart, hl := c.run(segs, partial)
			if nPart != nFull || nPart < 2 || !bytes.Equal(c.hdr[:hl], fullHdr) {
				t.Fatalf("partial segments coalesce into %d (headers %x), full ones into %d (%x)", nPart, c.hdr[:hl], nFull, fullHdr)
			}
			if n, _ := c.run(segs, nil); n != 1 {
				t.Errorf("partial segments taken as complete coalesce into %d, want 1: their fields must not verify", n)
			}
			vh, ok := partialVnet(segs[0])
			if !ok || vh.flags != vnetNeedsCsum || int(vh.csumStart) != f.l3() || int(vh.csumStart+vh.csumOffset) != field {
				t.Errorf("lone partial segment: vnet header %+v, want NEEDS_CSUM at %d, field at %d", vh, f.l3(), field)
			}
			for k, seg := range segs {
				if !CompleteChecksum(seg) {
					t.Fatalf("segment %d: not completed", k)
				}
				if !bytes.Equal(seg, full[k]) {
					t.Fatalf("segment %d completed:\n got %x\nwant %x", k, seg[:f.hl()], full[k][:f.hl()])
				}
			}
		})
	}
}
