package pcap

import (
	"bytes"
	"errors"
	"io"
	"math"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
)

// FuzzReader: any bytes either fail to open with an error, or read to an
// end (io.EOF) or an error, never panic; and what is read holds: no
// packet longer than MaxRecord, none shorter on the wire than captured,
// a truncation inside the file, and the same result a second time.
func FuzzReader(f *testing.F) {
	pkt := ipPacket(1)
	n := uint32(len(pkt))
	f.Add(append(classicHeader(65535, 101), classicRecord(1, 2, n, n, pkt)...))
	f.Add(append(classicHeader(65535, 1), classicRecord(1, 2, 0xffffffff, 0xffffffff, pkt)...))
	f.Add(bytes.Join([][]byte{ngSHBBytes(), ngIDBBytes(101, 65535, "up-in"),
		ngEPBBytes(0, 1e6, n, n, pkt, ngOption(1, []byte("pi2hop: queue=L ecn-in=ECT(1)")))}, nil))
	f.Add(bytes.Join([][]byte{ngSHBBytes(), ngIDBBytes(1, 0, "eth0"), ngEPBBytes(0, 0, n, 0xffffffff, pkt, nil)}, nil))
	f.Add([]byte{0x0a, 0x0d, 0x0d, 0x0a, 12, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		type out struct {
			times, lens []int64
			trunc       Truncation
			truncated   bool
			err         string
		}
		read := func() (o out) {
			r, err := NewReader(bytes.NewReader(data), "f")
			if err != nil {
				o.err = err.Error()
				return o
			}
			for {
				p, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					o.err = err.Error()
					break
				}
				if len(p.Data) > MaxRecord || p.Length > MaxRecord || p.Length < len(p.Data) || len(p.Data) == 0 {
					t.Fatalf("packet of %d bytes captured, %d on the wire", len(p.Data), p.Length)
				}
				if v := p.Data[0] >> 4; v != 4 && v != 6 {
					t.Fatalf("packet of IP version %d", v)
				}
				o.times = append(o.times, p.Time)
				o.lens = append(o.lens, int64(p.Length))
			}
			if r.Truncated != nil {
				o.trunc, o.truncated = *r.Truncated, true
				if tr := r.Truncated; tr.Bytes < 1 || tr.Bytes >= int64(len(data)) {
					t.Fatalf("truncated %+v in a file of %d bytes", tr, len(data))
				}
			}
			return o
		}
		a, b := read(), read()
		if len(a.times) != len(b.times) || a.trunc != b.trunc || a.err != b.err {
			t.Fatalf("two reads differ: %+v, %+v", a, b)
		}
	})
}

// FuzzRecordLengths builds pcap and pcapng files of three records with
// original lengths chosen by the fuzzer (over MaxRecord included), cut at
// a point it chooses, and checks what the reader returns against what
// was written: each record within the bound and complete before the cut,
// with its time and length; the records over the bound counted; the cut
// reported with the exact number of bytes of the record it ends in.
func FuzzRecordLengths(f *testing.F) {
	f.Add(false, []byte("abcdefgh"), uint32(60), uint32(70), uint32(80), uint32(0))
	f.Add(true, []byte("abcdefgh"), uint32(60), uint32(MaxRecord+1), uint32(10), uint32(50))
	f.Add(true, []byte{}, uint32(0xffffffff), uint32(0), uint32(MaxRecord), uint32(7))
	f.Add(false, bytes.Repeat([]byte{1}, 300), uint32(1<<31), uint32(28), uint32(1500), uint32(1000))
	f.Fuzz(func(t *testing.T, ng bool, payload []byte, o0, o1, o2, cut uint32) {
		if len(payload) > 3000 {
			payload = payload[:3000]
		}
		var file []byte
		var starts []int
		if ng {
			file = append(ngSHBBytes(), ngIDBBytes(101, 0, "x")...)
		} else {
			file = classicHeader(0, 101)
		}
		head := len(file)
		type rec struct {
			at        int64
			capLen    int
			origLen   uint32
			oversized bool
		}
		var recs []rec
		for i, orig := range []uint32{o0, o1, o2} {
			// An IPv4 header, then a third of the payload each.
			data := append(ipPacket(i)[:20:20], payload[i*len(payload)/3:(i+1)*len(payload)/3]...)
			n := uint32(len(data))
			starts = append(starts, len(file))
			sec, usec := uint32(i+1), uint32(i*7)
			if ng {
				file = append(file, ngEPBBytes(0, uint64(sec)*1e6+uint64(usec), n, orig, data, nil)...)
			} else {
				file = append(file, classicRecord(sec, usec, n, orig, data)...)
			}
			recs = append(recs, rec{at: int64(sec)*1e9 + int64(usec)*1e3, capLen: len(data), origLen: orig, oversized: orig > MaxRecord})
		}
		starts = append(starts, len(file))
		end := head + int(cut%uint32(len(file)-head+1))
		file = file[:end]

		var want []rec
		var wantOver int
		var wantTrunc *Truncation
		for i, r := range recs {
			if starts[i+1] <= end {
				if r.oversized {
					wantOver++
				} else {
					want = append(want, r)
				}
				continue
			}
			if got := end - starts[i]; got > 0 {
				hdr, partial := 16, "record"
				if ng {
					hdr, partial = 12, "block"
				}
				wantTrunc = &Truncation{Bytes: int64(got), Partial: partial}
				if got < hdr {
					wantTrunc.Partial += " header"
				}
				// A classic record over the bound is discarded unread, so
				// the reader counts it even when its bytes are cut.
				if r.oversized && !ng && got >= 16 {
					wantOver++
				}
			}
			break
		}
		r, err := NewReader(bytes.NewReader(file), "f")
		if err != nil {
			t.Fatal(err)
		}
		var got []rec
		for {
			p, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, rec{at: p.Time, capLen: len(p.Data), origLen: uint32(p.Length)})
		}
		if len(got) != len(want) || r.Oversize != wantOver || (r.Truncated == nil) != (wantTrunc == nil) ||
			(wantTrunc != nil && *r.Truncated != *wantTrunc) {
			t.Fatalf("read %+v, %d oversize, truncated %+v; want %+v, %d, %+v", got, r.Oversize, r.Truncated, want, wantOver, wantTrunc)
		}
		for i, w := range want {
			wantLen := max(w.origLen, uint32(w.capLen))
			if got[i].at != w.at || got[i].capLen != w.capLen || got[i].origLen != wantLen {
				t.Fatalf("packet %d: %+v, want at %d, %d bytes captured, %d on the wire", i, got[i], w.at, w.capLen, wantLen)
			}
		}
	})
}

// FuzzCommentRoundTrip: any annotation formats to a comment that parses
// back to it (prob to its six decimals; the LLLL class is written as L),
// every reason and sub included.
func FuzzCommentRoundTrip(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint8(1), uint8(1), int64(1_234_567), uint32(1<<28), uint32(0), true)
	f.Add(uint8(0), uint8(0), uint8(2), uint8(5), int64(0), uint32(math.MaxUint32), uint32(1), true)
	f.Add(uint8(2), uint8(3), uint8(0), uint8(0), int64(-1), uint32(0), uint32(9), false)
	f.Add(uint8(0), uint8(2), uint8(2), uint8(6), int64(math.MinInt64), uint32(7), uint32(0), true)
	f.Add(uint8(0), uint8(2), uint8(1), uint8(7), int64(20e6), uint32(0), uint32(math.MaxUint32), true)
	// Every reason aqm names (its String is "unknown" past the last).
	nReasons := aqm.Reason(0)
	for nReasons.String() != "unknown" {
		nReasons++
	}
	f.Fuzz(func(t *testing.T, class, ecn, action, reason uint8, sojourn int64, prob, sub uint32, decided bool) {
		a := Annotation{
			Class: aqm.Class(class % 3), ECNIn: aqm.ECN(ecn % 4), HasDecision: decided,
		}
		if decided {
			a.Sojourn, a.Prob = sojourn, prob
			a.Verdict = aqm.Verdict{Action: aqm.Action(action % 3), Reason: aqm.Reason(reason) % nReasons, Sub: sub}
		}
		text := string(AppendComment(nil, &a))
		back, err := ParseComment(text)
		if err != nil {
			t.Fatalf("%+v formats as %q, which does not parse: %v", a, text, err)
		}
		want := a
		if want.Class == aqm.LLLL {
			want.Class = aqm.L4S
		}
		want.Verdict.Class = want.Class
		if d := math.Abs(float64(back.Prob) - float64(want.Prob)); d > 0.5e-6*aqm.MaxProb+1 {
			t.Fatalf("%q: prob %d, want %d", text, back.Prob, want.Prob)
		}
		back.Prob = want.Prob
		if back != want {
			t.Fatalf("%q parses as %+v, want %+v", text, back, want)
		}
	})
}

// FuzzParseComment: any text either fails to parse, or parses to an
// annotation whose own comment parses to the same annotation.
func FuzzParseComment(f *testing.F) {
	for _, s := range []string{
		"pi2hop: queue=L ecn-in=ECT(1) sojourn=1.234567ms prob=0.051300 verdict=marked reason=step",
		"pi2hop: queue=C ecn-in=Not-ECT",
		"pi2hop:  queue=C  sojourn=-0.000001ms verdict=dropped future=x",
		"pi2hop: queue=L prob=1e-7 verdict=sent sojourn=9223372036854.775807ms",
		"pi2hop: queue=C ecn-in=ECT(0) sojourn=20.000000ms prob=0.000000 verdict=marked reason=codel sub=3",
		"pi2hop: queue=C sub=3",
		"not ours",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseComment(s)
		if err != nil {
			return
		}
		text := string(AppendComment(nil, &a))
		b, err := ParseComment(text)
		if err != nil {
			t.Fatalf("%q parses as %+v, whose comment %q does not parse: %v", s, a, text, err)
		}
		if d := math.Abs(float64(a.Prob) - float64(b.Prob)); d > 0.5e-6*aqm.MaxProb+1 {
			t.Fatalf("%q: prob %d, then %d", s, a.Prob, b.Prob)
		}
		b.Prob = a.Prob
		if a != b {
			t.Fatalf("%q parses as %+v, its comment %q as %+v", s, a, text, b)
		}
	})
}
