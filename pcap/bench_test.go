package pcap

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/pcap/pcaptest"
)

var scenarioVerdict = aqm.Verdict{Action: aqm.Mark, Reason: aqm.ReasonCoupled, Class: aqm.L4S}

// BenchmarkOffer is the cost a tap adds to the data path.
func BenchmarkOffer(b *testing.B) {
	c, err := NewCapture(filepath.Join(b.TempDir(), "o.pcapng"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	in := c.AddInterface("up-out")
	pkt := pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 6, Payload: 1400}.Build()
	ann := &Annotation{HasDecision: true, Sojourn: 1e6}
	for b.Loop() {
		c.Offer(in, 1, pkt, ann)
	}
}

// BenchmarkCaptureWriter is the writer's sustained rate: records offered
// (each one waiting for room while the ring is full: back-pressure, not a
// second try of a failed check) until Close has written them all, with
// annotations, 128-byte snaplen, to a file.
func BenchmarkCaptureWriter(b *testing.B) {
	c, err := NewCapture(filepath.Join(b.TempDir(), "w.pcapng"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	taps := c.AddTaps("up")
	pkt := pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 6, Payload: 1400}.Build()
	ann := &Annotation{HasDecision: true, Sojourn: 1234567, Prob: 1 << 28, Verdict: scenarioVerdict}
	cpu0 := pcaptest.CPUTime()
	for i := 0; b.Loop(); i++ {
		for !c.Offer(taps.Out, int64(i), pkt, ann) {
			runtime.Gosched()
		}
	}
	if err := c.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64((pcaptest.CPUTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/record")
}
