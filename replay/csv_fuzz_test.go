package replay

import (
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
)

// FuzzCSVTrace: any input either parses into packets that satisfy the
// trace rules or fails with an error that names the input and a line.
func FuzzCSVTrace(f *testing.F) {
	for _, seed := range []string{
		"time_ns,bytes,ecn\n0,1500,1\n",
		"flow,ecn,time_ns,bytes\r\n1,2,3,4\r\n",
		"time_ns,bytes,ecn\n5,1,3\n4,1,3\n",
		"time_ns,bytes,ecn,flow\n#x\n\n0,65535,0,4294967295\n",
		"",
		",,,\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		c := NewCSVSource(strings.NewReader(in), "f.csv")
		var last int64
		for n := 0; ; n++ {
			var p Packet
			ok, err := c.Next(&p)
			if err != nil {
				if !strings.HasPrefix(err.Error(), "f.csv:") {
					t.Fatalf("error %q does not name the input", err)
				}
				return
			}
			if !ok {
				return
			}
			if p.Time < last || p.Len < 1 || p.Len > 65535 || p.ECN > 3 {
				t.Fatalf("row %d: bad packet %+v after t=%d", n, p, last)
			}
			last = p.Time
		}
	})
}

// FuzzCSVRoundTrip: a trace written from the fuzzer's rows, with the
// columns in an order it picks, optional spaces, CRLF, comments and blank
// lines, reads back as exactly those packets.
func FuzzCSVRoundTrip(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, uint8(0), false)
	f.Add([]byte{255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255}, uint8(23), true)
	f.Add([]byte{}, uint8(5), true)
	f.Fuzz(func(t *testing.T, raw []byte, order uint8, crlf bool) {
		raw = raw[:min(len(raw), 3000)] // 500 rows: times stay far from overflow
		// Every permutation of the four columns, or three without flow.
		perms := [][]int{}
		var permute func(prefix []int, rest []int)
		permute = func(prefix, rest []int) {
			if len(rest) == 0 {
				perms = append(perms, prefix)
				return
			}
			for i := range rest {
				next := append(append([]int{}, rest[:i]...), rest[i+1:]...)
				permute(append(append([]int{}, prefix...), rest[i]), next)
			}
		}
		permute(nil, []int{colTime, colBytes, colECN, colFlow})
		cols := perms[int(order)%len(perms)]
		withFlow := order < 128
		if !withFlow {
			cols = slices.DeleteFunc(slices.Clone(cols), func(c int) bool { return c == colFlow })
		}
		nl := "\n"
		if crlf {
			nl = "\r\n"
		}
		var b strings.Builder
		for i, c := range cols {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(colNames[c])
		}
		b.WriteString(nl)
		var want []Packet
		var at int64
		for i := 0; i+6 <= len(raw); i += 6 {
			r := raw[i : i+6]
			at += int64(r[0]) << (r[1] % 40) // gaps of 0 to 255·2^39 ns
			p := Packet{Time: at, Len: int32(binary.BigEndian.Uint16(r[2:])%65535) + 1, ECN: aqm.ECN(r[4] % 4)}
			if withFlow {
				p.Flow = uint32(r[5]) * 16843009 // spread over 0..2^32-1
			}
			want = append(want, p)
			vals := [numCols]int64{colTime: p.Time, colBytes: int64(p.Len), colECN: int64(p.ECN), colFlow: int64(p.Flow)}
			for j, c := range cols {
				if j > 0 {
					b.WriteString(",")
				}
				if r[5]%3 == 0 {
					b.WriteString(" ")
				}
				b.WriteString(strconv.FormatInt(vals[c], 10))
			}
			b.WriteString(nl)
			if r[5]%5 == 0 {
				b.WriteString("# comment" + nl + nl)
			}
		}
		src := NewCSVSource(strings.NewReader(b.String()), "f.csv")
		for i := 0; ; i++ {
			var p Packet
			ok, err := src.Next(&p)
			if err != nil {
				t.Fatalf("%q: row %d: %v", b.String(), i, err)
			}
			if !ok {
				if i != len(want) {
					t.Fatalf("%q: %d rows read, want %d", b.String(), i, len(want))
				}
				return
			}
			if i >= len(want) || p.Time != want[i].Time || p.Len != want[i].Len || p.ECN != want[i].ECN ||
				p.Flow != want[i].Flow || p.Frame != nil {
				t.Fatalf("%q: row %d read as %+v, want %+v", b.String(), i, p, want[min(i, len(want)-1)])
			}
		}
	})
}
