//go:build unix

package rtt

import (
	"fmt"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's CPU time so far (user and system): on a box
// shared with other work a benchmark's wall time per op counts the time
// it waited for a core, its CPU time does not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds cpu-ns/op, the CPU time per op since start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// benchPackets is a TCP exchange with timestamps over n flows: per flow
// a data segment up with a new TSval, echoing the last ACK's, and its ACK
// down echoing it, so that every packet is remembered and every packet
// takes a sample (after the first round).
func benchPackets(n int) (pkts [][]byte, dirs []Dir) {
	for f := range n {
		up := tcpTS(ackf, 1000, 1, 1200, 100, 899)
		up.sport = uint16(1024 + f)
		down := tcpTS(ackf, 1, 2200, 0, 900, 100)
		down.sport = uint16(1024 + f)
		pkts = append(pkts, up.build(Up), down.build(Down))
		dirs = append(dirs, Up, Down)
	}
	return pkts, dirs
}

// bump advances the TSvals, TSecrs and sequence numbers so that each
// round is new data answered once.
func bump(p []byte, d Dir) {
	l4 := p[20:]
	be.PutUint32(l4[4:], be.Uint32(l4[4:])+1200)
	be.PutUint32(l4[8:], be.Uint32(l4[8:])+1200)
	be.PutUint32(l4[24:], be.Uint32(l4[24:])+1)
	be.PutUint32(l4[28:], be.Uint32(l4[28:])+1)
}

// BenchmarkPacket reports ns per TCP packet through Table.Packet, beside
// a baseline in the same run: the same packets read as the hop reads
// every packet (version, length, the 5-tuple words) and the same
// bumping of their fields, without the table. The ratio is the table's
// cost relative to that pass.
func BenchmarkPacket(b *testing.B) {
	for _, n := range []int{1, 1000} {
		pkts, dirs := benchPackets(n)
		b.Run(fmt.Sprintf("flows=%d/baseline", n), func(b *testing.B) {
			var sink uint64
			defer reportCPU(b, cpuTime())
			for i := 0; b.Loop(); i++ {
				j := i % len(pkts)
				p := pkts[j]
				if j&1 == 0 {
					bump(p, dirs[j])
					bump(pkts[j+1], dirs[j+1])
				}
				sink += uint64(p[0]>>4) + uint64(be.Uint16(p[2:])) + le.Uint64(p[12:]) + uint64(be.Uint32(p[20:])) + uint64(dirs[j])
			}
			_ = sink
		})
		b.Run(fmt.Sprintf("flows=%d/table", n), func(b *testing.B) {
			tb, err := NewTable(DefaultConfig)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			defer reportCPU(b, cpuTime())
			for i := 0; b.Loop(); i++ {
				j := i % len(pkts)
				p := pkts[j]
				if j&1 == 0 {
					bump(p, dirs[j])
					bump(pkts[j+1], dirs[j+1])
				}
				tb.Packet(p, dirs[j], int64(i))
			}
			if st := tb.Stats(); st.Samples < uint64(b.N)*9/10 || st.Dropped > 0 {
				b.Fatalf("%+v after %d packets: want a sample a packet and nothing dropped", st, b.N)
			}
		})
	}
}
