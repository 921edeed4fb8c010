package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/pcap/pcaptest"
)

// writeOnePoint writes a one-point capture (one tcpdump, no pi2hop taps)
// of n packets at 83 333 packets/s, a 1 Gbit/s link of 1500-byte packets,
// snap length 28 (IPv4 and UDP headers only), over 1000 UDP flows.
func writeOnePoint(tb testing.TB, path string, n int) {
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	le := binary.LittleEndian
	var h [24]byte
	le.PutUint32(h[0:], 0xa1b23c4d) // ns timestamps
	le.PutUint16(h[4:], 2)
	le.PutUint16(h[6:], 4)
	le.PutUint32(h[16:], 28)
	le.PutUint32(h[20:], 101) // LINKTYPE_RAW
	w.Write(h[:])
	var rec [16]byte
	const gap = 12_000 // ns
	t := int64(1_750_000_000) * 1e9
	for i := range n {
		t += gap
		le.PutUint32(rec[0:], uint32(t/1e9))
		le.PutUint32(rec[4:], uint32(t%1e9))
		le.PutUint32(rec[8:], 28)
		le.PutUint32(rec[12:], 1500)
		w.Write(rec[:])
		ecn := aqm.ECN(1 + i%2) // ECT(1) and ECT(0)
		ip := pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 17, SPort: uint16(10000 + i%1000), DPort: 443, ECN: ecn, ID: uint32(i), Payload: 1472}.Build()
		w.Write(ip[:28])
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkAnalyzeRSS runs the built `pi2hop analyze` on generated
// one-point captures of 1 M and 10 M packets and reports its peak RSS
// (wait4's ru_maxrss) beside the packet count: the analysis keeps one
// horizon of unmatched packets, not all of them, so the figure should
// not grow with the capture (target: under 200 MB at 10 M).
func BenchmarkAnalyzeRSS(b *testing.B) {
	dir := b.TempDir()
	bin := buildPi2hop(b)
	for _, n := range []int{1_000_000, 10_000_000} {
		b.Run(fmt.Sprintf("%dM", n/1_000_000), func(b *testing.B) {
			path := filepath.Join(dir, "onepoint.pcap")
			writeOnePoint(b, path, n)
			defer os.Remove(path)
			b.ResetTimer()
			var rss int64
			for b.Loop() {
				cmd := exec.Command(bin, "analyze", "--json", path)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("pi2hop analyze: %v\n%.2000s", err, out)
				}
				ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
				rss = max(rss, ru.Maxrss<<10) // Linux: KiB
			}
			b.ReportMetric(float64(n), "packets")
			b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MB")
		})
	}
}
