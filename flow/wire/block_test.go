package wire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
)

// Golden bytes laid out by hand from udp_prague's rfc8888ack_t (packed,
// big-endian): type 18, begin_seq, num_reports, then per packet
// R<<15 | ECN<<13 | ATO.
func TestBlockGolden(t *testing.T) {
	a := BlockACK{Begin: 0x01020304, Reports: []BlockReport{
		{Received: true, ECN: aqm.ECT1, ATO: 3}, // 0x8000|0x2000|3 = 0xa003
		{},                                      // lost: 0
		{Received: true, ECN: aqm.CE, ATO: MaxATO},     // 0x8000|0x6000|0x1fff = 0xffff
		{Received: true, ECN: aqm.NotECT, ATO: 0x0100}, // 0x8100
	}}
	want := []byte{18, 1, 2, 3, 4, 0, 4, 0xa0, 0x03, 0, 0, 0xff, 0xff, 0x81, 0x00}
	got := AppendBlockACK(nil, a)
	if !bytes.Equal(got, want) {
		t.Fatalf("got % x\nwant % x", got, want)
	}
	if n := len(AppendBlockACK(nil, BlockACK{})); n != BlockHeaderSize {
		t.Errorf("empty block is %d bytes, want %d", n, BlockHeaderSize)
	}
	d, err := DecodeBlockACK(want, nil)
	if err != nil || d.Begin != a.Begin || len(d.Reports) != len(a.Reports) {
		t.Fatalf("decode: %+v, %v", d, err)
	}
	for i := range a.Reports {
		if d.Reports[i] != a.Reports[i] {
			t.Errorf("report %d: %+v, want %+v", i, d.Reports[i], a.Reports[i])
		}
	}
}

func TestBlockRoundTripReusesSlice(t *testing.T) {
	reports := make([]BlockReport, 0, 700)
	for _, a := range []BlockACK{
		{Begin: 1, Reports: []BlockReport{{Received: true, ECN: aqm.ECT1}}},
		{Begin: -5, Reports: make([]BlockReport, 696)}, // a 1400 B message
		{Begin: 0x7fffffff},
	} {
		p := AppendBlockACK(nil, a)
		d, err := DecodeBlockACK(append(p, 9, 9), reports) // trailing bytes ignored
		if err != nil || d.Begin != a.Begin || len(d.Reports) != len(a.Reports) {
			t.Fatalf("round trip of %d reports at %d: %d at %d, %v", len(a.Reports), a.Begin, len(d.Reports), d.Begin, err)
		}
		if len(a.Reports) > 0 && &d.Reports[0] != &reports[:1][0] {
			t.Error("DecodeBlockACK did not reuse the slice it was given")
		}
	}
	if n := MaxBlockReports(1400); n != 696 { // (1400 − 7)/2 = 696.5
		t.Errorf("MaxBlockReports(1400) = %d, want 696", n)
	}
	if n := MaxBlockReports(3); n != 0 {
		t.Errorf("MaxBlockReports(3) = %d, want 0", n)
	}
}

func TestBlockDecodeErrors(t *testing.T) {
	full := AppendBlockACK(nil, BlockACK{Begin: 1, Reports: make([]BlockReport, 3)})
	for _, tc := range []struct {
		name string
		p    []byte
		want error
	}{
		{"empty", nil, ErrShort},
		{"header cut", full[:6], ErrShort},
		{"reports cut", full[:len(full)-1], ErrShort},
		{"type-17 ACK", AppendACK(nil, ACK{}), ErrType},
	} {
		if _, err := DecodeBlockACK(tc.p, nil); !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := DecodeACK(append(full, make([]byte, 20)...)); !errors.Is(err, ErrType) {
		t.Errorf("block feedback decoded as a type-17 ACK: %v", err)
	}
}

func TestATO(t *testing.T) {
	for _, tc := range []struct {
		us   int64
		want uint16
	}{
		{-5, 0}, {0, 0}, {511, 0}, {512, 1}, // rounded: (µs + 512) >> 10
		{1024, 1}, {1535, 1}, {1536, 2},
		{25000, 24},          // a 25 ms report period: 24.4 -> 24
		{8388095, 0x1fff},    // 8191.5 units rounds to the largest
		{10_000_000, 0x1fff}, // saturates (udp_prague would wrap to 0x1c4f)
	} {
		if got := ATO(tc.us); got != tc.want {
			t.Errorf("ATO(%d µs) = %#x, want %#x", tc.us, got, tc.want)
		}
	}
	if got := ATOMicros(24); got != 24576 {
		t.Errorf("ATOMicros(24) = %d, want 24576", got)
	}
}

func FuzzBlockACK(f *testing.F) {
	f.Add(AppendBlockACK(nil, BlockACK{Begin: 7, Reports: []BlockReport{{Received: true, ECN: aqm.CE, ATO: 5}, {}}}))
	f.Add([]byte{18, 0, 0, 0, 1, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, p []byte) {
		a, err := DecodeBlockACK(p, nil)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to the same bytes.
		n := BlockHeaderSize + len(a.Reports)*BlockReportSize
		if q := AppendBlockACK(nil, a); !bytes.Equal(q, p[:n]) {
			t.Errorf("re-encodes as % x, input % x", q, p[:n])
		}
		for _, r := range a.Reports {
			if r.ATO > MaxATO || r.ECN > 3 {
				t.Errorf("report out of range: %+v", r)
			}
		}
	})
}
