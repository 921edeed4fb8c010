package check

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/pi2hop/pi2hop/aqm"
)

// The wire format. Every message starts with
//
//	magic "p2ck" | type u8 | session u32
//
// then, by type (integers big-endian):
//
//	hello, helloAck     nothing
//	probe               seq u16 | sent TOS u8 | echo ECN u8
//	echo                seq u16 | sent TOS u8 | arrived TOS u8 | flags u8 | arrived TTL u8 | echo TOS u8
//	summaryReq          nothing
//	summary             arrived [4][4]u16 | TOS zero [4][4]u16 | echoes [4]u16 | TTL min u8 | TTL max u8
//	load                duration ms u32
//	loadAck             duration ms u32 | port u16 ×3 (L4S sink, classic sink, RTT probes; 0 when refused)
//	loadReportReq       nothing
//	loadReport          arrived [2][4]u32 (the L4S flow's, then the classic flow's data packets by codepoint)
//
// padded with zeros to the message's fixed size. A request is as long as
// its answer (hello and helloAck, probe and echo, summaryReq and summary),
// and the responder answers nothing shorter: it never sends more bytes
// than it was sent (load and loadAck too; the load itself is Prague data
// and its ACKs, which are smaller; loadReportReq and loadReport). The [4] arrays are indexed by aqm.ECN value; echoes
// counts the echoes the responder sent per codepoint (the reverse
// direction's sent counts).
const (
	magic = "p2ck"

	typeHello      = 1
	typeHelloAck   = 2
	typeProbe      = 3
	typeEcho       = 4
	typeSummaryReq = 5
	typeSummary    = 6
	typeLoad       = 7
	typeLoadAck    = 8
	// typeLoadReportReq asks what the load's flows arrived as; the
	// responder answers once its sinks have stopped (the request stops
	// them: the client's load is over).
	typeLoadReportReq = 9
	typeLoadReport    = 10

	headerSize  = 9
	ProbeSize   = 64  // probe, echo, hello and helloAck
	SummarySize = 128 // summaryReq and summary

	flagTOS = 1 // the arrived TOS byte is known
	flagTTL = 2 // the arrived TTL is known
)

var be = binary.BigEndian

// msg is any message, decoded; the fields of other types are zero.
type msg struct {
	typ     uint8
	session uint32
	seq     uint16
	sentTOS uint8   // probe, echo: the TOS the probe was sent with
	echoECN aqm.ECN // probe: the codepoint its echo is to carry
	// echo: what the probe arrived with, and the TOS the echo was sent with
	arrivedTOS uint8
	flags      uint8
	arrivedTTL uint8
	echoTOS    uint8
	// summary: the forward direction as the responder counted it
	arrived, tosZero [4][4]uint16
	echoes           [4]uint16
	ttlMin, ttlMax   uint8
	// load, loadAck: how long the load runs, and where the responder
	// sinks it (the L4S flow, the classic flow, the RTT probes)
	loadMs uint32
	ports  [3]uint16
	// loadReport: the load's data packets as the responder's sinks
	// counted them, by flow (L4S, classic) and codepoint
	loadArrived [2][4]uint32
}

// size is the padded length of a message of type typ.
func size(typ uint8) int {
	if typ == typeSummaryReq || typ == typeSummary {
		return SummarySize
	}
	return ProbeSize
}

// appendMsg appends m's encoding, padded to its size, to b.
func appendMsg(b []byte, m msg) []byte {
	start := len(b)
	b = append(b, magic...)
	b = append(b, m.typ)
	b = be.AppendUint32(b, m.session)
	switch m.typ {
	case typeProbe:
		b = be.AppendUint16(b, m.seq)
		b = append(b, m.sentTOS, uint8(m.echoECN&3))
	case typeEcho:
		b = be.AppendUint16(b, m.seq)
		b = append(b, m.sentTOS, m.arrivedTOS, m.flags, m.arrivedTTL, m.echoTOS)
	case typeSummary:
		for _, t := range [][4][4]uint16{m.arrived, m.tosZero} {
			for s := range 4 {
				for r := range 4 {
					b = be.AppendUint16(b, t[s][r])
				}
			}
		}
		for _, n := range m.echoes {
			b = be.AppendUint16(b, n)
		}
		b = append(b, m.ttlMin, m.ttlMax)
	case typeLoad:
		b = be.AppendUint32(b, m.loadMs)
	case typeLoadAck:
		b = be.AppendUint32(b, m.loadMs)
		for _, p := range m.ports {
			b = be.AppendUint16(b, p)
		}
	case typeLoadReport:
		for _, f := range m.loadArrived {
			for _, n := range f {
				b = be.AppendUint32(b, n)
			}
		}
	}
	for len(b)-start < size(m.typ) {
		b = append(b, 0)
	}
	return b
}

var errNotCheck = errors.New("not a pi2hop check message")

// parseMsg decodes one message. Anything without the magic, of an unknown
// type or shorter than its type's size is an error: a responder drops it
// without an answer.
func parseMsg(b []byte) (msg, error) {
	var m msg
	if len(b) < headerSize || string(b[:4]) != magic {
		return m, errNotCheck
	}
	m.typ, m.session = b[4], be.Uint32(b[5:9])
	if m.typ < typeHello || m.typ > typeLoadReport {
		return m, fmt.Errorf("unknown message type %d", m.typ)
	}
	if len(b) < size(m.typ) {
		return m, fmt.Errorf("message type %d of %d bytes, want %d", m.typ, len(b), size(m.typ))
	}
	p := b[headerSize:]
	switch m.typ {
	case typeProbe:
		m.seq, m.sentTOS, m.echoECN = be.Uint16(p), p[2], aqm.ECN(p[3]&3)
	case typeEcho:
		m.seq = be.Uint16(p)
		m.sentTOS, m.arrivedTOS, m.flags, m.arrivedTTL, m.echoTOS = p[2], p[3], p[4], p[5], p[6]
	case typeSummary:
		for i, t := range []*[4][4]uint16{&m.arrived, &m.tosZero} {
			for s := range 4 {
				for r := range 4 {
					t[s][r] = be.Uint16(p[32*i+8*s+2*r:])
				}
			}
		}
		for i := range m.echoes {
			m.echoes[i] = be.Uint16(p[64+2*i:])
		}
		m.ttlMin, m.ttlMax = p[72], p[73]
	case typeLoad:
		m.loadMs = be.Uint32(p)
	case typeLoadAck:
		m.loadMs = be.Uint32(p)
		for i := range m.ports {
			m.ports[i] = be.Uint16(p[4+2*i:])
		}
	case typeLoadReport:
		for f := range m.loadArrived {
			for c := range m.loadArrived[f] {
				m.loadArrived[f][c] = be.Uint32(p[16*f+4*c:])
			}
		}
	}
	return m, nil
}
