package pcap

import (
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
)

var scenarioVerdict = aqm.Verdict{Action: aqm.Mark, Reason: aqm.ReasonCoupled, Class: aqm.L4S}

// cpuTime is the process's user plus system CPU time: on a shared
// machine a steadier figure than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAnalyze1M analyses a capture of one million packet records
// (500 000 packets, each at the in tap and at the out or drop tap, all
// annotated), the size the issue sets a 10 s budget for.
func BenchmarkAnalyze1M(b *testing.B) {
	path := filepath.Join(b.TempDir(), "1m.pcapng")
	start := time.Now()
	scenario{n: 500_000}.write(b, path)
	b.Logf("wrote 1M records in %v", time.Since(start))
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		res, err := Analyze([]Input{{Path: path}}, AnalyzeOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if n := res.Files[0].Packets; n != 1_000_001 {
			b.Fatalf("read %d packets, want 1000001", n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e9, "s/1M")
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/1M")
}

// BenchmarkOffer is the cost a tap adds to the data path.
func BenchmarkOffer(b *testing.B) {
	c, err := NewCapture(filepath.Join(b.TempDir(), "o.pcapng"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	in := c.AddInterface("up-out")
	pkt := testPacket{src: cli4, dst: srv4, proto: 6, payload: 1400}.build()
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
	pkt := testPacket{src: cli4, dst: srv4, proto: 6, payload: 1400}.build()
	ann := &Annotation{HasDecision: true, Sojourn: 1234567, Prob: 1 << 28, Verdict: scenarioVerdict}
	cpu0 := cpuTime()
	for i := 0; b.Loop(); i++ {
		for !c.Offer(taps.Out, int64(i), pkt, ann) {
			runtime.Gosched()
		}
	}
	if err := c.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/record")
}
