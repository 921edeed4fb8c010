//go:build ignore

// mixedtrace writes a reproducible mixed packet trace for replay: ten
// seconds of six flows (two ECT(1), two ECT(0), two Not-ECT) that load a
// 10 Mbit/s link about twice over while on, so DualPI2 marks and drops,
// with all flows off 0.5 s in every 2 s, so the queue empties and the PI
// runs idle updates. It writes the same packets as a CSV trace and as a
// raw-IP pcap (IPv4/UDP headers, 64 bytes captured of each packet):
//
//	go run replay/testdata/mixedtrace.go -csv mixed.csv -pcap mixed.pcap
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"sort"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/pi2hop/pi2hop/aqm"
)

type flow struct {
	ecn   aqm.ECN
	bps   float64
	sizes []int
}

type pkt struct {
	t    int64
	size int
	ecn  aqm.ECN
	flow int
}

func main() {
	csvPath := flag.String("csv", "mixed.csv", "CSV trace to write")
	pcapPath := flag.String("pcap", "mixed.pcap", "pcap to write (same packets)")
	seed := flag.Uint64("seed", 1, "random seed")
	dur := flag.Duration("duration", 10*time.Second, "trace length")
	flag.Parse()

	flows := []flow{
		{aqm.ECT1, 5e6, []int{1500}},
		{aqm.ECT1, 3e6, []int{1200, 1500}},
		{aqm.ECT0, 4e6, []int{1500}},
		{aqm.ECT0, 3e6, []int{576, 1500}},
		{aqm.NotECT, 3e6, []int{64, 576, 1500}},
		{aqm.NotECT, 2e6, []int{1500}},
	}
	rng := rand.New(rand.NewPCG(*seed, 0))
	var pkts []pkt
	const period, on = 2e9, 1.5e9
	for id, f := range flows {
		for t := 0.0; t < float64(*dur); {
			size := f.sizes[rng.IntN(len(f.sizes))]
			t += rng.ExpFloat64() * float64(size) * 8e9 / f.bps
			if int64(t)%period >= on || t >= float64(*dur) {
				continue // this flow is off
			}
			pkts = append(pkts, pkt{int64(t), size, f.ecn, id})
		}
	}
	sort.SliceStable(pkts, func(i, j int) bool { return pkts[i].t < pkts[j].t })

	cf, err := os.Create(*csvPath)
	if err != nil {
		log.Fatal(err)
	}
	cw := bufio.NewWriter(cf)
	fmt.Fprintln(cw, "time_ns,bytes,ecn,flow")
	for _, p := range pkts {
		fmt.Fprintf(cw, "%d,%d,%d,%d\n", p.t, p.size, p.ecn, p.flow)
	}
	if err := cw.Flush(); err != nil {
		log.Fatal(err)
	}
	cf.Close()

	pf, err := os.Create(*pcapPath)
	if err != nil {
		log.Fatal(err)
	}
	pb := bufio.NewWriter(pf)
	pw := pcapgo.NewWriterNanos(pb)
	const snaplen = 64
	if err := pw.WriteFileHeader(snaplen, layers.LinkTypeRaw); err != nil {
		log.Fatal(err)
	}
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	hdr := make([]byte, snaplen)
	for i, p := range pkts {
		n := min(p.size, snaplen)
		ipv4UDP(hdr, p, uint16(i))
		ci := gopacket.CaptureInfo{Timestamp: base.Add(time.Duration(p.t)), CaptureLength: n, Length: p.size}
		if err := pw.WritePacket(ci, hdr[:n]); err != nil {
			log.Fatal(err)
		}
	}
	if err := pb.Flush(); err != nil {
		log.Fatal(err)
	}
	pf.Close()
	fmt.Printf("%d packets, %d flows, %v\n", len(pkts), len(flows), *dur)
}

// ipv4UDP writes an IPv4/UDP header for p into b (the rest zero): one
// source port per flow, a valid header checksum.
func ipv4UDP(b []byte, p pkt, id uint16) {
	clear(b)
	b[0], b[1] = 0x45, byte(p.ecn)
	binary.BigEndian.PutUint16(b[2:], uint16(p.size))
	binary.BigEndian.PutUint16(b[4:], id)
	b[8], b[9] = 64, 17
	copy(b[12:], []byte{198, 18, 0, 1})
	copy(b[16:], []byte{198, 18, 0, 2})
	binary.BigEndian.PutUint16(b[10:], aqm.Checksum(b[:20]))
	binary.BigEndian.PutUint16(b[20:], uint16(5000+p.flow))
	binary.BigEndian.PutUint16(b[22:], 443)
	binary.BigEndian.PutUint16(b[24:], uint16(p.size-20))
}
