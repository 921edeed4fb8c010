package main

import (
	"fmt"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/spf13/pflag"
)

// captureFlags are --capture, --snaplen and --capture-max-size, shared by
// run, shell, lab and replay.
type captureFlags struct {
	path    string
	snaplen int
	maxSize sizeValue
}

func addCaptureFlags(fs *pflag.FlagSet) *captureFlags {
	c := &captureFlags{maxSize: sizeValue{max: 1 << 40}}
	fs.StringVar(&c.path, "capture", "", "write an annotated pcapng `FILE`: one interface per tap (up-in, up-out, up-drop, down-...), each decision as a packet comment")
	fs.IntVar(&c.snaplen, "snaplen", 128, "bytes of each packet to capture, from the IP header on")
	fs.Var(&c.maxSize, "capture-max-size", "rotate the capture before a file passes this `SIZE` (tc units: 100m); FILE.1, FILE.2, ... follow")
	return c
}

// open starts the capture, or returns nil when --capture was not given.
// timeOffset turns the caller's clock (monotonic or virtual ns) into Unix ns.
func (c *captureFlags) open(comment string, timeOffset int64) (*pcap.Capture, error) {
	if c.path == "" {
		return nil, nil
	}
	if c.snaplen < 1 || c.snaplen > 262144 {
		return nil, fmt.Errorf("--snaplen %d: must be in 1..262144 bytes", c.snaplen)
	}
	if c.maxSize.bytes != 0 && c.maxSize.bytes < 4096 {
		return nil, fmt.Errorf("--capture-max-size %d: must be at least 4096 bytes", c.maxSize.bytes)
	}
	capt, err := pcap.NewCapture(c.path, pcap.Options{
		Snaplen:    c.snaplen,
		MaxSize:    int64(c.maxSize.bytes),
		Comment:    comment,
		TimeOffset: timeOffset,
	})
	if err != nil {
		return nil, fmt.Errorf("--capture: %w", err)
	}
	return capt, nil
}

// replayCapture writes replay's packets: the input at arrival, what leaves
// at its delay-line release (CE applied), drops at their time. A CSV trace
// has no packet bytes, so a minimal IPv4/UDP header is made up for each
// row: the ECN field and total length from the trace, the flow id as the
// source port, addresses from the benchmarking range (RFC 2544,
// 198.18.0.0/15), so analyze and Wireshark can read the file.
type replayCapture struct {
	c    *pcap.Capture
	taps pcap.Taps
	hdr  [28]byte
}

func newReplayCapture(c *pcap.Capture) *replayCapture {
	return &replayCapture{c: c, taps: c.AddTaps("replay")}
}

// packet returns the bytes to capture for p: its frame, or a made-up header.
func (rc *replayCapture) packet(p *tracePacket, ecn aqm.ECN) []byte {
	if p.frame != nil {
		return p.frame[:p.capLen]
	}
	return synthHeader(rc.hdr[:], p.len, ecn, p.flow)
}

func (rc *replayCapture) arrival(p *tracePacket) {
	rc.c.OfferWait(rc.taps.In, p.t, rc.packet(p, p.ecn), int(p.len), nil)
}

func (rc *replayCapture) decided(p *tracePacket, ev *shaper.Event) {
	id := rc.taps.Out
	ecn := ev.Meta.ECN
	switch {
	case ev.Verdict.Action == aqm.Drop:
		id = rc.taps.Drop
	case ev.Verdict.Action == aqm.Mark && ecn != aqm.NotECT:
		ecn = aqm.CE
	}
	pkt := rc.packet(p, ecn)
	if p.frame != nil && ecn == aqm.CE && ev.Meta.ECN != aqm.CE {
		// --pcap input: mark a copy so --pcap-out and the capture agree.
		pkt = append(rc.hdr[:0:0], pkt...)
		aqm.View(pkt).SetCE()
	}
	a := pcap.EventAnnotation(ev)
	rc.c.OfferWait(id, ev.At, pkt, int(p.len), &a)
}

// synthHeader writes a 28-byte IPv4+UDP header into b (len ≥ 28) with a
// valid header checksum, and returns it.
func synthHeader(b []byte, totalLen int32, ecn aqm.ECN, flow uint32) []byte {
	b = b[:28]
	clear(b)
	if totalLen < 28 {
		totalLen = 28
	}
	if totalLen > 65535 {
		totalLen = 65535
	}
	b[0] = 0x45
	b[1] = byte(ecn) & 3
	b[2], b[3] = byte(totalLen>>8), byte(totalLen)
	b[8] = 64 // TTL
	b[9] = 17 // UDP
	copy(b[12:16], []byte{198, 18, 0, 1})
	copy(b[16:20], []byte{198, 18, 0, 2})
	cs := aqm.Checksum(b[:20])
	b[10], b[11] = byte(cs>>8), byte(cs)
	sport := uint16(flow%64511) + 1024
	b[20], b[21] = byte(sport>>8), byte(sport)
	b[22], b[23] = 0x1f, 0x90 // 8080
	ulen := totalLen - 20
	b[24], b[25] = byte(ulen>>8), byte(ulen)
	return b
}
