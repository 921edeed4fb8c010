package check

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
)

// The probe's bytes, laid out by hand from the format in wire.go.
func TestProbeBytes(t *testing.T) {
	b := appendMsg(nil, msg{typ: typeProbe, session: 0x01020304, seq: 0x0506, sentTOS: 0x29, echoECN: aqm.CE})
	want := "7032636b" + "03" + "01020304" + "0506" + "29" + "03"
	if len(b) != ProbeSize {
		t.Fatalf("probe of %d bytes, want %d", len(b), ProbeSize)
	}
	if got := hex.EncodeToString(b[:13]); got != want {
		t.Errorf("probe starts %s, want %s", got, want)
	}
	if !bytes.Equal(b[13:], make([]byte, ProbeSize-13)) {
		t.Errorf("padding not zero: % x", b[13:])
	}
}

// The load answer's bytes, laid out by hand from the format in wire.go.
func TestLoadAckBytes(t *testing.T) {
	b := appendMsg(nil, msg{typ: typeLoadAck, session: 9, loadMs: 4000, ports: [3]uint16{0x1001, 0x1002, 0x1003}})
	want := "7032636b" + "08" + "00000009" + "00000fa0" + "1001" + "1002" + "1003"
	if got := hex.EncodeToString(b[:19]); got != want || len(b) != ProbeSize {
		t.Errorf("loadAck %s (%d bytes), want %s (%d)", got, len(b), want, ProbeSize)
	}
}

// The load report's bytes: the L4S flow's counts, then the classic
// flow's, each Not-ECT, ECT(1), ECT(0), CE as u32.
func TestLoadReportBytes(t *testing.T) {
	b := appendMsg(nil, msg{typ: typeLoadReport, session: 9, loadArrived: [2][4]uint32{{0, 100, 25, 3}, {50, 0, 0, 0}}})
	want := "7032636b" + "0a" + "00000009" + "00000000" + "00000064" + "00000019" + "00000003" + "00000032" + "000000000000000000000000"
	if got := hex.EncodeToString(b[:41]); got != want || len(b) != ProbeSize {
		t.Errorf("loadReport %s (%d bytes), want %s (%d)", got, len(b), want, ProbeSize)
	}
}

func TestWireRoundTrip(t *testing.T) {
	sum := msg{typ: typeSummary, session: 7, echoes: [4]uint16{1, 2, 3, 0xffff}, ttlMin: 61, ttlMax: 63}
	sum.arrived[aqm.ECT1][aqm.CE] = 9
	sum.arrived[aqm.CE][aqm.CE] = 0x1234
	sum.tosZero[aqm.ECT0][aqm.NotECT] = 5
	for _, m := range []msg{
		{typ: typeHello, session: 1},
		{typ: typeHelloAck, session: 0xffffffff},
		{typ: typeProbe, session: 2, seq: 99, sentTOS: 0x2a, echoECN: aqm.ECT1},
		{typ: typeEcho, session: 3, seq: 65535, sentTOS: 0x2b, arrivedTOS: 0x28, flags: flagTOS | flagTTL, arrivedTTL: 62, echoTOS: 0x29},
		{typ: typeSummaryReq, session: 4},
		sum,
		{typ: typeLoad, session: 5, loadMs: 5000},
		{typ: typeLoadAck, session: 6, loadMs: 5000, ports: [3]uint16{40001, 40002, 65535}},
		{typ: typeLoadReportReq, session: 7},
		{typ: typeLoadReport, session: 8, loadArrived: [2][4]uint32{{1, 2, 3, 4}, {0xffffffff, 0, 0, 7}}},
	} {
		b := appendMsg(nil, m)
		if len(b) != size(m.typ) {
			t.Errorf("type %d: %d bytes, want %d", m.typ, len(b), size(m.typ))
		}
		got, err := parseMsg(b)
		if err != nil || got != m {
			t.Errorf("type %d: round trip gave %+v, %v; want %+v", m.typ, got, err, m)
		}
	}
}

// Requests and their answers have one size, so the responder's rule
// (answer nothing shorter than the answer) costs a client nothing.
func TestRequestAsLongAsAnswer(t *testing.T) {
	for _, p := range [][2]uint8{{typeHello, typeHelloAck}, {typeProbe, typeEcho}, {typeSummaryReq, typeSummary}, {typeLoad, typeLoadAck}, {typeLoadReportReq, typeLoadReport}} {
		if size(p[0]) != size(p[1]) {
			t.Errorf("type %d is %d bytes, its answer %d", p[0], size(p[0]), size(p[1]))
		}
	}
}

func TestParseMalformed(t *testing.T) {
	good := appendMsg(nil, msg{typ: typeSummaryReq, session: 1})
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"header only, short", good[:headerSize-1]},
		{"other magic", append([]byte("P2CK"), good[4:]...)},
		{"type 0", append(append([]byte(magic), 0), good[5:]...)},
		{"type 11", append(append([]byte(magic), 11), good[5:]...)},
		{"summary request cut to a probe's size", good[:ProbeSize]},
		{"probe cut short", appendMsg(nil, msg{typ: typeProbe})[:20]},
	} {
		if m, err := parseMsg(c.b); err == nil {
			t.Errorf("%s: parsed as %+v", c.name, m)
		}
	}
}

func FuzzParseMsg(f *testing.F) {
	f.Add(appendMsg(nil, msg{typ: typeSummary}))
	f.Add(appendMsg(nil, msg{typ: typeEcho, seq: 3}))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseMsg(b)
		if err != nil {
			return
		}
		// What parses re-encodes to the same bytes up to its size (the
		// padding is not read, so it is compared as zeros).
		out := appendMsg(nil, m)
		if len(out) != size(m.typ) {
			t.Fatalf("re-encoded to %d bytes", len(out))
		}
		again, err := parseMsg(out)
		if err != nil || again != m {
			t.Fatalf("re-encoded message parses as %+v, %v; want %+v", again, err, m)
		}
	})
}
