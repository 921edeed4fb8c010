package shaper

import (
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
