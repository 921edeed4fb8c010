package wire

import (
	"fmt"

	"github.com/pi2hop/pi2hop/aqm"
)

// TypeBlockACK is udp_prague's RFC 8888-style feedback (pkt_format.h,
// rfc8888ack_t; the receiver's --rfc8888): one message reports a run of
// consecutive sequence numbers, a 16-bit word each, like the report
// blocks of RFC 8888 §3.1 without the RTCP framing:
//
//	type u8 (18) | begin_seq i32 | num_reports u16 | num_reports × report u16
//
//	report:  R (bit 15) | ECN (bits 14-13) | ATO (bits 12-0)
//
// R says the packet arrived, ECN is the codepoint it arrived with, and ATO
// (arrival time offset) how long before the report was sent it arrived,
// in units of 1024 µs (udp_prague's reading of RFC 8888 §3.1's 1/1024 s;
// 0x1FFF means that much or more).
const TypeBlockACK = 18

// Sizes of the block feedback, in bytes.
const (
	BlockHeaderSize = 7 // type, begin_seq, num_reports
	BlockReportSize = 2
	// MaxATO is the largest arrival time offset: 0x1FFF units.
	MaxATO = 0x1fff
)

// BlockReport is one packet's report.
type BlockReport struct {
	Received bool
	ECN      aqm.ECN // the arrival codepoint (0 when not received)
	ATO      uint16  // arrival time offset, 1024 µs units, at most MaxATO
}

// BlockACK reports the packets Begin, Begin+1, … one Report each.
type BlockACK struct {
	Begin   int32
	Reports []BlockReport
}

// MaxBlockReports returns how many reports fit a message of at most size
// bytes (udp_prague fills up to its maximum packet size).
func MaxBlockReports(size int) int { return max(0, (size-BlockHeaderSize)/BlockReportSize) }

// ATO converts an arrival time offset in µs to the wire's 1024 µs units,
// rounded to the nearest (as udp_prague: (µs + 512) >> 10).
// udp_prague masks the result to 13 bits, so an offset of 8.4 s or more
// wraps; this saturates at MaxATO as RFC 8888 §3.1 says.
func ATO(us int64) uint16 {
	if us <= 0 {
		return 0
	}
	return uint16(min((us+512)>>10, MaxATO))
}

// ATOMicros converts wire units back to µs (a unit is 1024 µs, as
// udp_prague counts it; RFC 8888's 1/1024 s is 976.5625 µs, which would be
// off by 2.4 % from what the reference peer means).
func ATOMicros(ato uint16) int64 { return int64(ato) << 10 }

func (r BlockReport) word() uint16 {
	var w uint16
	if r.Received {
		w = 1 << 15
	}
	return w | uint16(r.ECN&3)<<13 | min(r.ATO, MaxATO)
}

// AppendBlockACK appends a's message to b. Reports beyond 65535 (the u16
// count) are not written; keep a message within MaxBlockReports of the
// packet size.
func AppendBlockACK(b []byte, a BlockACK) []byte {
	n := min(len(a.Reports), 0xffff)
	b = append(b, TypeBlockACK)
	b = be.AppendUint32(b, uint32(a.Begin))
	b = be.AppendUint16(b, uint16(n))
	for _, r := range a.Reports[:n] {
		b = be.AppendUint16(b, r.word())
	}
	return b
}

// DecodeBlockACK decodes a block feedback message, appending its reports
// to reports[:0] (so a caller can reuse one slice for every message).
// Bytes after the last report are ignored.
func DecodeBlockACK(p []byte, reports []BlockReport) (BlockACK, error) {
	if len(p) < BlockHeaderSize {
		return BlockACK{}, fmt.Errorf("%w: %d bytes, block feedback needs %d", ErrShort, len(p), BlockHeaderSize)
	}
	if p[0] != TypeBlockACK {
		return BlockACK{}, fmt.Errorf("%w: %d, want %d", ErrType, p[0], TypeBlockACK)
	}
	n := int(be.Uint16(p[5:]))
	if need := BlockHeaderSize + n*BlockReportSize; len(p) < need {
		return BlockACK{}, fmt.Errorf("%w: %d bytes, %d reports need %d", ErrShort, len(p), n, need)
	}
	a := BlockACK{Begin: int32(be.Uint32(p[1:])), Reports: reports[:0]}
	for i := range n {
		w := be.Uint16(p[BlockHeaderSize+i*BlockReportSize:])
		a.Reports = append(a.Reports, BlockReport{Received: w&(1<<15) != 0, ECN: aqm.ECN(w >> 13 & 3), ATO: w & MaxATO})
	}
	return a, nil
}
