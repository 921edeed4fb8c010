package analyze

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/pcap/pcaptest"
)

// BenchmarkAnalyze1M analyses a capture of one million packet records
// (500 000 packets, each at the in tap and at the out or drop tap, all
// annotated): analysing a capture this size has a 10 s target.
func BenchmarkAnalyze1M(b *testing.B) {
	path := filepath.Join(b.TempDir(), "1m.pcapng")
	start := time.Now()
	scenario{n: 500_000}.write(b, path)
	b.Logf("wrote 1M records in %v", time.Since(start))
	b.ResetTimer()
	cpu0 := pcaptest.CPUTime()
	for b.Loop() {
		res, err := Analyze([]Input{{Path: path}}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if n := res.Files[0].Packets; n != 1_000_001 {
			b.Fatalf("read %d packets, want 1000001", n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e9, "s/1M")
	b.ReportMetric((pcaptest.CPUTime()-cpu0).Seconds()/float64(b.N), "cpu-s/1M")
}
