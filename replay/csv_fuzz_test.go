package replay

import (
	"strings"
	"testing"
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
