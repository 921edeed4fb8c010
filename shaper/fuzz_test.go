package shaper

import (
	"fmt"
	"strings"
	"testing"
)

// Any input either parses into a rate whose Finish is sane (never before
// the start, later or equal for more bytes) or gives an error; never a panic.
func FuzzParseRateTrace(f *testing.F) {
	for _, s := range []string{"1\n", "0\n0\n3\n", "5\n5\n10\n", "time,rate\n0,10mbit\n1s,0\n2.5,1kbps\n", "0,1\n", "x", "1\n\n2\n#c\n"} {
		f.Add(s, int64(123456), 1500)
	}
	f.Fuzz(func(t *testing.T, text string, start int64, n int) {
		start, n = max(start, 0)%(1<<50), max(n, 0)%(1<<17)
		for _, parse := range []func(s string) (Rate, error){
			func(s string) (Rate, error) { return ParseMahimahi(strings.NewReader(s)) },
			func(s string) (Rate, error) { return ParseRateCSV(strings.NewReader(s)) },
		} {
			r, err := parse(text)
			if err != nil {
				continue
			}
			a, b := r.Finish(start, n), r.Finish(start, n+1)
			if a < start || b < a {
				t.Fatalf("%q: Finish(%d, %d) = %d, Finish(%d, %d) = %d", text, start, n, a, start, n+1, b)
			}
			if c := r.Finish(a, 1); c < a {
				t.Fatalf("%q: Finish(%d, 1) = %d", text, a, c)
			}
		}
	})
}

func FuzzParseUnits(f *testing.F) {
	for _, s := range []string{"10mbit", "1.5gbps", "64k", "1e3", "ge:p=1%,r=2%", "0.5%", ".", "9999999999999999999999tbit"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ParseRate(s)
		ParseSize(s)
		if l, err := ParseLoss(s); err == nil && l == nil {
			t.Fatalf("ParseLoss(%q) = nil, nil", s)
		}
	})
}

// FuzzMahimahiDeliveries: a well-formed trace made of the fuzzer's
// millisecond steps parses, and a backlogged link on it delivers each
// packet of the fuzzer's sizes in the same ms as mm-link's model
// (mahimahiDeliveries): the parser's and Finish's results checked, not
// only their not panicking.
func FuzzMahimahiDeliveries(f *testing.F) {
	f.Add([]byte{1}, []byte{125})
	f.Add([]byte{0, 0, 0, 2, 1}, []byte{3, 125, 250, 5})
	f.Add([]byte{2, 3, 0, 0, 1, 3}, []byte{0, 0, 0, 255, 100})
	f.Fuzz(func(t *testing.T, steps, sizes []byte) {
		if len(steps) == 0 || len(steps) > 64 || len(sizes) > 200 {
			return
		}
		var times []int64
		var text strings.Builder
		ms := int64(steps[0] % 3)
		for i, s := range steps {
			if i > 0 {
				ms += int64(s % 4) // 0: several opportunities in one ms
			}
			times = append(times, ms)
			fmt.Fprintf(&text, "%d\n", ms)
			if s%7 == 6 {
				text.WriteString("# a comment\n\n")
			}
		}
		if ms == 0 {
			times = append(times, 1)
			text.WriteString("1\n")
		}
		r, err := ParseMahimahi(strings.NewReader(text.String()))
		if err != nil {
			t.Fatalf("ParseMahimahi(%q): %v", text.String(), err)
		}
		n := make([]int, len(sizes))
		for i, b := range sizes {
			n[i] = 1 + int(b)*12 // 1 to 3061 bytes: some need two opportunities
		}
		want := mahimahiDeliveries(times, n)
		start := int64(0)
		for i, size := range n {
			fin := r.Finish(start, size)
			if fin < start || fin/nsPerMs != want[i] {
				t.Fatalf("trace %v: packet %d (%d B) from %d finishes at %d (ms %d); mahimahi delivers at ms %d",
					times, i, size, start, fin, fin/nsPerMs, want[i])
			}
			start = fin
		}
	})
}
