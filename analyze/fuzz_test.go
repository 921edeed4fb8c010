package analyze

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"net/netip"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/pcap/pcaptest"
)

// FuzzDecodeIP checks decodeIP's fields against the header bytes read
// here independently (RFC 791, RFC 8200), and that the match key ignores
// what a router or the hop may change on the way (ECN, TTL / hop limit,
// the IPv4 checksum).
func FuzzDecodeIP(f *testing.F) {
	f.Add(pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 17, SPort: 1000, DPort: 2000, ID: 1, Payload: 32}.Build())
	f.Add(pcaptest.Packet{Src: pcaptest.Cli6, Dst: pcaptest.Srv6, Proto: 6, SPort: 1, DPort: 2, ECN: aqm.ECT1, Payload: 10}.Build())
	f.Add(pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 6, IPv4HeaderLength: 60, BadCsum: true}.Build())
	f.Add(append([]byte{0x60, 0, 0, 0, 0, 8, 44, 64}, make([]byte, 40)...)) // IPv6 fragment header
	f.Add([]byte{0x45})
	seed := maphash.MakeSeed()
	be := binary.BigEndian
	f.Fuzz(func(t *testing.T, b []byte) {
		h, ok := decodeIP(b)
		var wantOK bool
		switch {
		case len(b) >= 20 && b[0]>>4 == 4 && b[0]&0xf >= 5:
			wantOK = true
			ihl := int(b[0]&0xf) * 4
			if h.ecn != aqm.ECN(b[1]&3) || h.totalLen != int(be.Uint16(b[2:])) || h.flow.Proto != b[9] ||
				h.flow.Src != netip.AddrFrom4([4]byte(b[12:16])) || h.flow.Dst != netip.AddrFrom4([4]byte(b[16:20])) {
				t.Fatalf("IPv4 header % x decoded as %+v", b[:20], h)
			}
			if h.csumChecked != (len(b) >= ihl) || h.csumChecked && h.csumOK != (onesSum(b[:ihl]) == 0xffff) {
				t.Fatalf("IPv4 checksum: checked %v ok %v for % x", h.csumChecked, h.csumOK, b[:min(ihl, len(b))])
			}
			var sp, dp uint16
			if hasPorts(b[9]) && be.Uint16(b[6:])&0x1fff == 0 && len(b) >= ihl+4 {
				sp, dp = be.Uint16(b[ihl:]), be.Uint16(b[ihl+2:])
			}
			if h.flow.SrcPort != sp || h.flow.DstPort != dp {
				t.Fatalf("IPv4 ports %d > %d, want %d > %d", h.flow.SrcPort, h.flow.DstPort, sp, dp)
			}
		case len(b) >= 40 && b[0]>>4 == 6:
			wantOK = true
			if h.ecn != aqm.ECN(be.Uint32(b)>>20&3) || h.totalLen != 40+int(be.Uint16(b[4:])) ||
				h.flow.Src != netip.AddrFrom16([16]byte(b[8:24])) || h.flow.Dst != netip.AddrFrom16([16]byte(b[24:40])) {
				t.Fatalf("IPv6 header % x decoded as %+v", b[:40], h)
			}
			if next := b[6]; next != 0 && next != 43 && next != 60 && next != 44 {
				var sp, dp uint16
				if hasPorts(next) && len(b) >= 44 {
					sp, dp = be.Uint16(b[40:]), be.Uint16(b[42:])
				}
				if h.flow.Proto != next || h.flow.SrcPort != sp || h.flow.DstPort != dp {
					t.Fatalf("IPv6 without extensions: proto %d ports %d > %d, want %d %d > %d", h.flow.Proto, h.flow.SrcPort, h.flow.DstPort, next, sp, dp)
				}
			}
		}
		if ok != wantOK {
			t.Fatalf("decodeIP(% x) ok %v, want %v", b[:min(len(b), 40)], ok, wantOK)
		}
		if !ok {
			return
		}
		// What the path may change leaves the key alone.
		k := h.matchKey(seed, b)
		c := bytes.Clone(b)
		if h.version == 4 {
			c[1] ^= 3
			c[8]--
			c[10], c[11] = c[10]^0xff, c[11]^0x0f
		} else {
			c[1] ^= 0x30
			c[7]--
		}
		h2, ok2 := decodeIP(c)
		if !ok2 || h2.matchKey(seed, c) != k {
			t.Fatalf("match key changed with ECN, TTL and checksum: % x", b[:min(len(b), 40)])
		}
	})
}

func hasPorts(proto uint8) bool {
	switch proto {
	case 6, 17, 132, 136, 33:
		return true
	}
	return false
}

// onesSum is the RFC 1071 one's complement sum of b (even length).
func onesSum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return uint16(sum)
}
