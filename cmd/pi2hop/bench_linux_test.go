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
	le, be := binary.LittleEndian, binary.BigEndian
	var h [24]byte
	le.PutUint32(h[0:], 0xa1b23c4d) // ns timestamps
	le.PutUint16(h[4:], 2)
	le.PutUint16(h[6:], 4)
	le.PutUint32(h[16:], 28)
	le.PutUint32(h[20:], 101) // LINKTYPE_RAW
	w.Write(h[:])
	var rec [16 + 28]byte
	ip := rec[16:]
	ip[0], ip[6], ip[8], ip[9] = 0x45, 0x40, 64, 17
	be.PutUint16(ip[2:], 1500)
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 1, 1})
	const gap = 12_000 // ns
	t := int64(1_750_000_000) * 1e9
	for i := range n {
		t += gap
		le.PutUint32(rec[0:], uint32(t/1e9))
		le.PutUint32(rec[4:], uint32(t%1e9))
		le.PutUint32(rec[8:], 28)
		le.PutUint32(rec[12:], 1500)
		ip[1] = byte(1 + i%2) // ECT(1) and ECT(0)
		be.PutUint16(ip[4:], uint16(i))
		be.PutUint16(ip[10:], 0)
		be.PutUint16(ip[10:], headerChecksum(ip[:20]))
		be.PutUint16(ip[20:], uint16(10000+i%1000))
		be.PutUint16(ip[22:], 443)
		be.PutUint16(ip[24:], 1480)
		w.Write(rec[:])
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

func headerChecksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i < len(h); i += 2 {
		sum += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
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
