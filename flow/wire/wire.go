// Package wire encodes and decodes the UDP Prague messages, byte-compatible
// with L4STeam's udp_prague (pkt_format.h): packed structs, big-endian,
// timestamps int32 microseconds. A C++ udp_prague peer and its Wireshark
// dissector understand what this package writes, and the reverse.
//
//	DATA     (type 1)  type u8 | ts i32 | echoed_ts i32 | seq i32 | padding        13 B + padding
//	RT DATA  (type 2)  DATA fields | frame_nr i32 | frame_sent i32 | frame_size i32   25 B + padding
//	ACK      (type 17) type u8 | ack_seq i32 | ts i32 | echoed_ts i32 |
//	                   pkts_received i32 | pkts_CE i32 | pkts_lost i32 | error_L4S u8   26 B
//	BLOCK    (type 18) type u8 | begin_seq i32 | num_reports u16 | reports u16…   7 B + 2 B a report (block.go)
//
// pi2hop's video call adds, inside the RT DATA padding (which udp_prague
// ignores), a Video extension, and a PLI message of its own type.
//
// pi2hop's receiver appends to every ACK an ECN-counts extension (the
// counts QUIC's ACK_ECN carries, for the sender's ECN validation), after
// the 26 bytes udp_prague reads:
//
//	ACK ECN  magic u8 (0xec) | ect0 i32 | ect1 i32 | not_ect i32      13 B after the ACK
//
// The format is not versioned: it stays compatible both ways. A
// udp_prague sender reads the first 26 bytes; an ACK without the
// extension is a udp_prague receiver's (Counts false).
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Message types (the first byte).
const (
	TypeData   = 1  // bulk data
	TypeRTData = 2  // real-time (frame) data
	TypeACK    = 17 // per-packet ACK with cumulative counters
	TypePLI    = 48 // pi2hop: picture-loss indication (receiver → video sender)
)

// Sizes of the fixed headers, in bytes.
const (
	DataSize   = 13
	RTDataSize = 25
	ACKSize    = 26
	VideoSize  = 14 // the Video extension after the RT DATA header
	ACKECNSize = 13 // the ECN-counts extension after the ACK
	PLISize    = 5
)

// Data is a DATA or RT DATA header. Frame fields are used for RT DATA only.
type Data struct {
	RT        bool  // RT DATA (type 2) rather than DATA (type 1)
	TS        int32 // sender's timestamp, µs
	EchoedTS  int32 // the peer's last timestamp advanced by its hold time
	Seq       int32 // starts at 1, one per packet
	FrameNr   int32 // starts at 1, one per frame
	FrameSent int32 // bytes of the frame sent before this packet
	FrameSize int32 // bytes in the frame
}

// ACK acknowledges one data packet and carries the receiver's cumulative
// counters.
type ACK struct {
	AckSeq   int32
	TS       int32
	EchoedTS int32
	Received int32 // data packets received so far
	CE       int32 // of which CE-marked
	Lost     int32 // sequence gaps so far, less late arrivals
	ErrorL4S bool  // a packet arrived neither ECT(1) nor CE: stop sending ECT(1)
	// Counts says the ACK carries the ECN-counts extension: the received
	// packets by arrival codepoint (CE is the field above).
	Counts             bool
	ECT0, ECT1, NotECT int32
}

// Video is pi2hop's per-packet video information, carried in the RT DATA
// padding: when the frame was captured and where the packet sits in it.
type Video struct {
	FrameTS int64  // capture time, µs since the Unix epoch (sender's clock)
	Key     bool   // the frame is a keyframe
	Count   uint16 // packets in the frame
	Idx     uint16 // this packet's index in the frame, from 0
}

// PLI asks the video sender for a keyframe.
type PLI struct {
	FrameNr int32 // the highest frame number the receiver has seen
}

// Errors the decoders return.
var (
	ErrShort = errors.New("wire: message too short")
	ErrType  = errors.New("wire: unexpected message type")
)

var be = binary.BigEndian

// AppendData appends d's header to b; the caller pads to the packet size.
func AppendData(b []byte, d Data) []byte {
	t := byte(TypeData)
	if d.RT {
		t = TypeRTData
	}
	b = append(b, t)
	b = be.AppendUint32(b, uint32(d.TS))
	b = be.AppendUint32(b, uint32(d.EchoedTS))
	b = be.AppendUint32(b, uint32(d.Seq))
	if d.RT {
		b = be.AppendUint32(b, uint32(d.FrameNr))
		b = be.AppendUint32(b, uint32(d.FrameSent))
		b = be.AppendUint32(b, uint32(d.FrameSize))
	}
	return b
}

// DecodeData decodes a DATA or RT DATA header at the start of p.
func DecodeData(p []byte) (Data, error) {
	if len(p) < DataSize {
		return Data{}, fmt.Errorf("%w: %d bytes, DATA needs %d", ErrShort, len(p), DataSize)
	}
	var d Data
	switch p[0] {
	case TypeData:
	case TypeRTData:
		if len(p) < RTDataSize {
			return Data{}, fmt.Errorf("%w: %d bytes, RT DATA needs %d", ErrShort, len(p), RTDataSize)
		}
		d.RT = true
		d.FrameNr = int32(be.Uint32(p[13:]))
		d.FrameSent = int32(be.Uint32(p[17:]))
		d.FrameSize = int32(be.Uint32(p[21:]))
	default:
		return Data{}, fmt.Errorf("%w: %d, want %d or %d", ErrType, p[0], TypeData, TypeRTData)
	}
	d.TS = int32(be.Uint32(p[1:]))
	d.EchoedTS = int32(be.Uint32(p[5:]))
	d.Seq = int32(be.Uint32(p[9:]))
	return d, nil
}

// ackECNMagic marks the ECN-counts extension.
const ackECNMagic = 0xec

// AppendACK appends a's 26 bytes to b, and the ECN-counts extension when
// a.Counts.
func AppendACK(b []byte, a ACK) []byte {
	b = append(b, TypeACK)
	b = be.AppendUint32(b, uint32(a.AckSeq))
	b = be.AppendUint32(b, uint32(a.TS))
	b = be.AppendUint32(b, uint32(a.EchoedTS))
	b = be.AppendUint32(b, uint32(a.Received))
	b = be.AppendUint32(b, uint32(a.CE))
	b = be.AppendUint32(b, uint32(a.Lost))
	var e byte
	if a.ErrorL4S {
		e = 1
	}
	b = append(b, e)
	if a.Counts {
		b = append(b, ackECNMagic)
		b = be.AppendUint32(b, uint32(a.ECT0))
		b = be.AppendUint32(b, uint32(a.ECT1))
		b = be.AppendUint32(b, uint32(a.NotECT))
	}
	return b
}

// DecodeACK decodes an ACK and its ECN-counts extension if it has one;
// other bytes after the 26 are ignored.
func DecodeACK(p []byte) (ACK, error) {
	if len(p) < ACKSize {
		return ACK{}, fmt.Errorf("%w: %d bytes, ACK needs %d", ErrShort, len(p), ACKSize)
	}
	if p[0] != TypeACK {
		return ACK{}, fmt.Errorf("%w: %d, want %d", ErrType, p[0], TypeACK)
	}
	a := ACK{
		AckSeq:   int32(be.Uint32(p[1:])),
		TS:       int32(be.Uint32(p[5:])),
		EchoedTS: int32(be.Uint32(p[9:])),
		Received: int32(be.Uint32(p[13:])),
		CE:       int32(be.Uint32(p[17:])),
		Lost:     int32(be.Uint32(p[21:])),
		ErrorL4S: p[25] != 0, // a C++ bool: any non-zero byte is true
	}
	if x := p[ACKSize:]; len(x) >= ACKECNSize && x[0] == ackECNMagic {
		a.Counts = true
		a.ECT0 = int32(be.Uint32(x[1:]))
		a.ECT1 = int32(be.Uint32(x[5:]))
		a.NotECT = int32(be.Uint32(x[9:]))
	}
	return a, nil
}

// videoMagic marks the Video extension so that padding from another
// sender (udp_prague fills it with its own bytes) is not taken for one.
const videoMagic = 0x9d

// AppendVideo appends the Video extension; call it right after AppendData
// of an RT DATA header:
//
//	magic u8 (0x9d) | flags u8 (bit 0 keyframe) | frame_ts i64 µs | count u16 | idx u16
func AppendVideo(b []byte, v Video) []byte {
	var flags byte
	if v.Key {
		flags |= 1
	}
	b = append(b, videoMagic, flags)
	b = be.AppendUint64(b, uint64(v.FrameTS))
	b = be.AppendUint16(b, v.Count)
	return be.AppendUint16(b, v.Idx)
}

// DecodeVideo decodes the Video extension after an RT DATA header at the
// start of p. ok is false when p carries none (a plain udp_prague sender).
func DecodeVideo(p []byte) (v Video, ok bool) {
	if len(p) < RTDataSize+VideoSize || p[0] != TypeRTData || p[RTDataSize] != videoMagic {
		return Video{}, false
	}
	x := p[RTDataSize:]
	v.Key = x[1]&1 != 0
	v.FrameTS = int64(be.Uint64(x[2:]))
	v.Count = be.Uint16(x[10:])
	v.Idx = be.Uint16(x[12:])
	return v, true
}

// AppendPLI appends a PLI message.
func AppendPLI(b []byte, m PLI) []byte {
	b = append(b, TypePLI)
	return be.AppendUint32(b, uint32(m.FrameNr))
}

// DecodePLI decodes a PLI message.
func DecodePLI(p []byte) (PLI, error) {
	if len(p) < PLISize {
		return PLI{}, fmt.Errorf("%w: %d bytes, PLI needs %d", ErrShort, len(p), PLISize)
	}
	if p[0] != TypePLI {
		return PLI{}, fmt.Errorf("%w: %d, want %d", ErrType, p[0], TypePLI)
	}
	return PLI{FrameNr: int32(be.Uint32(p[1:]))}, nil
}
