package wire

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// Golden encodings, laid out by hand from udp_prague's packed structs
// (pkt_format.h): type byte, then big-endian 32-bit fields.
func TestGoldenBytes(t *testing.T) {
	tests := []struct {
		name string
		got  []byte
		want []byte
	}{
		{"DATA", AppendData(nil, Data{TS: 0x01020304, EchoedTS: -2, Seq: 7}),
			[]byte{1, 1, 2, 3, 4, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 7}},
		{"RT DATA", AppendData(nil, Data{RT: true, TS: 1, EchoedTS: 2, Seq: 3, FrameNr: 4, FrameSent: 1188, FrameSize: 5000}),
			[]byte{2, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0x04, 0xa4, 0, 0, 0x13, 0x88}},
		{"ACK", AppendACK(nil, ACK{AckSeq: 9, TS: 0x7fffffff, EchoedTS: -0x80000000, Received: 8, CE: 2, Lost: 1, ErrorL4S: true}),
			[]byte{17, 0, 0, 0, 9, 0x7f, 0xff, 0xff, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 2, 0, 0, 0, 1, 1}},
		{"ACK no error", AppendACK(nil, ACK{AckSeq: 1, TS: 1, EchoedTS: 1, Received: 1}),
			[]byte{17, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"ACK with ECN counts", AppendACK(nil, ACK{AckSeq: 1, TS: 1, EchoedTS: 1, Received: 10, CE: 2, Counts: true, ECT0: 1, ECT1: 0x0102, NotECT: 5}),
			[]byte{17, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 10, 0, 0, 0, 2, 0, 0, 0, 0, 0,
				0xec, 0, 0, 0, 1, 0, 0, 1, 2, 0, 0, 0, 5}},
		{"PLI", AppendPLI(nil, PLI{FrameNr: 300}), []byte{48, 0, 0, 1, 0x2c}},
		{"Video", AppendVideo(nil, Video{FrameTS: 0x0102030405060708, Key: true, Count: 3, Idx: 2}),
			[]byte{0x9d, 1, 1, 2, 3, 4, 5, 6, 7, 8, 0, 3, 0, 2}},
	}
	for _, tc := range tests {
		if !bytes.Equal(tc.got, tc.want) {
			t.Errorf("%s:\n got % x\nwant % x", tc.name, tc.got, tc.want)
		}
	}
	if n := len(AppendData(nil, Data{})); n != DataSize {
		t.Errorf("DATA is %d bytes, want %d", n, DataSize)
	}
	if n := len(AppendData(nil, Data{RT: true})); n != RTDataSize {
		t.Errorf("RT DATA is %d bytes, want %d", n, RTDataSize)
	}
	if n := len(AppendACK(nil, ACK{})); n != ACKSize {
		t.Errorf("ACK is %d bytes, want %d", n, ACKSize)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, d := range []Data{
		{TS: 1, EchoedTS: 0, Seq: 1},
		{TS: -5, EchoedTS: 0x7fffffff, Seq: -1},
		{RT: true, TS: 10, EchoedTS: 20, Seq: 30, FrameNr: 40, FrameSent: 50, FrameSize: 60},
	} {
		p := append(AppendData(nil, d), make([]byte, 100)...) // padding is ignored
		got, err := DecodeData(p)
		if err != nil || got != d {
			t.Errorf("DecodeData(AppendData(%+v)) = %+v, %v", d, got, err)
		}
	}
	a := ACK{AckSeq: 1 << 30, TS: 3, EchoedTS: 4, Received: 5, CE: 6, Lost: 7, ErrorL4S: true}
	if got, err := DecodeACK(AppendACK(nil, a)); err != nil || got != a {
		t.Errorf("DecodeACK round trip = %+v, %v; want %+v", got, err, a)
	}
	a.Counts, a.ECT0, a.ECT1, a.NotECT = true, 8, 9, 10
	if got, err := DecodeACK(AppendACK(nil, a)); err != nil || got != a {
		t.Errorf("DecodeACK round trip with counts = %+v, %v; want %+v", got, err, a)
	}
	// A udp_prague receiver's 26 bytes, or other bytes after them: no counts.
	for _, tail := range [][]byte{nil, make([]byte, ACKECNSize), {0xec, 1}} {
		if got, err := DecodeACK(append(AppendACK(nil, ACK{AckSeq: 1}), tail...)); err != nil || got.Counts {
			t.Errorf("DecodeACK with % x after the ACK: counts %v, %v; want none", tail, got.Counts, err)
		}
	}
	v := Video{FrameTS: 1700000000000000, Key: true, Count: 12, Idx: 11}
	p := AppendVideo(AppendData(nil, Data{RT: true, Seq: 1}), v)
	if got, ok := DecodeVideo(p); !ok || got != v {
		t.Errorf("DecodeVideo round trip = %+v, %v; want %+v", got, ok, v)
	}
	// udp_prague pads RT DATA with other bytes: no extension.
	plain := append(AppendData(nil, Data{RT: true, Seq: 1}), make([]byte, VideoSize)...)
	if _, ok := DecodeVideo(plain); ok {
		t.Error("DecodeVideo found an extension in zero padding")
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"empty DATA", errOf(DecodeData(nil)), ErrShort},
		{"short RT DATA", errOf(DecodeData(AppendData(nil, Data{RT: true})[:20])), ErrShort},
		{"ACK as DATA", errOf(DecodeData(AppendACK(nil, ACK{}))), ErrType},
		{"short ACK", errOf(DecodeACK(AppendACK(nil, ACK{})[:25])), ErrShort},
		{"DATA as ACK", errOf(DecodeACK(append(AppendData(nil, Data{}), make([]byte, 20)...))), ErrType},
		{"short PLI", errOf(DecodePLI([]byte{TypePLI, 0})), ErrShort},
		{"ACK as PLI", errOf(DecodePLI(AppendACK(nil, ACK{}))), ErrType},
	}
	for _, tc := range tests {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, tc.err, tc.want)
		}
	}
}

func errOf[T any](_ T, err error) error { return err }

func TestTimestamps(t *testing.T) {
	tests := []struct {
		us   int64
		want int32
	}{
		{0, 1}, // never 0
		{1, 1},
		{1 << 32, 1}, // wraps onto 0: still never 0
		{1<<32 + 5, 5},
		{1<<31 + 1, -1<<31 + 1},
	}
	for _, tc := range tests {
		if got := Stamp(tc.us); got != tc.want {
			t.Errorf("Stamp(%d) = %d, want %d", tc.us, got, tc.want)
		}
	}
	// A difference across the wrap is still right.
	sent := int64(1<<32 - 100)
	if d := Since(sent+250, Stamp(sent)); d != 250 {
		t.Errorf("Since across the wrap = %d, want 250", d)
	}
}

func TestEchoExcludesHoldTime(t *testing.T) {
	// The peer stamps at its time 1000; the packet takes 300 µs; we hold it
	// 5000 µs before echoing; the echo takes 200 µs back. The peer's RTT
	// from the echo must be 500, not 5500. Our clock reads 77 000 at receipt.
	var e Echo
	if e.Echoed(5) != 0 {
		t.Fatal("Echoed before any timestamp must be 0")
	}
	const peerSend, ourRecv = 1000, 77000
	e.Received(ourRecv, Stamp(peerSend))
	echoed := e.Echoed(ourRecv + 5000)
	peerNow := int64(peerSend + 300 + 5000 + 200)
	if rtt := Since(peerNow, echoed); rtt != 500 {
		t.Errorf("RTT from echo = %d µs, want 500", rtt)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(AppendData(nil, Data{TS: 1, Seq: 2}))
	f.Add(AppendVideo(AppendData(nil, Data{RT: true, Seq: 3}), Video{Count: 2}))
	f.Add(AppendACK(nil, ACK{AckSeq: 1, ErrorL4S: true}))
	f.Add(AppendPLI(nil, PLI{FrameNr: 2}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, p []byte) {
		// Decoders never panic; whatever decodes re-encodes to the same prefix.
		if d, err := DecodeData(p); err == nil {
			n := DataSize
			if d.RT {
				n = RTDataSize
			}
			if q := AppendData(nil, d); !bytes.Equal(q, p[:n]) {
				t.Errorf("DATA re-encodes as % x, input % x", q, p[:n])
			}
		}
		if a, err := DecodeACK(p); err == nil {
			q := AppendACK(nil, a)
			if !bytes.Equal(q[:ACKSize-1], p[:ACKSize-1]) || (q[ACKSize-1] != 0) != (p[ACKSize-1] != 0) {
				t.Errorf("ACK re-encodes as % x, input % x", q, p[:ACKSize])
			}
		}
		if v, ok := DecodeVideo(p); ok {
			if q := AppendVideo(nil, v); !bytes.Equal(q[2:], p[RTDataSize+2:RTDataSize+VideoSize]) {
				t.Errorf("Video re-encodes as % x", q)
			}
		}
		if m, err := DecodePLI(p); err == nil {
			if q := AppendPLI(nil, m); !bytes.Equal(q, p[:PLISize]) {
				t.Errorf("PLI re-encodes as % x", q)
			}
		}
	})
}

// TestClockAt: a kernel receive time converts to the clock's µs of that
// instant however late it is converted (the hold is measured from the same
// reading), 0 means now, a time in the future counts as now and one
// before the clock started as its start.
func TestClockAt(t *testing.T) {
	c := NewClock()
	time.Sleep(2 * time.Millisecond)
	x := time.Now()
	want := x.Sub(c.start).Microseconds()
	time.Sleep(3 * time.Millisecond) // converted later, as after a wake-up
	if got := c.At(x.UnixNano()); got < want-1 || got > want+1 {
		t.Errorf("At(%v) = %d µs, want %d ± 1", x, got, want)
	}
	before := c.Micros()
	if got := c.At(0); got < before {
		t.Errorf("At(0) = %d µs, before Micros %d", got, before)
	}
	if got := c.At(time.Now().Add(time.Hour).UnixNano()); got < before {
		t.Errorf("At(an hour ahead) = %d µs, want now (≥ %d)", got, before)
	}
	if got := c.At(1); got != 0 {
		t.Errorf("At(1970) = %d µs, want 0, the clock's start", got)
	}
}
