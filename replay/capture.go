package replay

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/invoker"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/pi2hop/pi2hop/shaper"
)

// CaptureWriter writes a replay into an annotated capture, like a live
// hop's taps: each packet at its arrival ("replay-in"), what leaves at its
// delay-line release with CE applied ("replay-out"), drops at their time
// ("replay-drop"), each decision as a packet comment. A CSV trace has no
// packet bytes, so a minimal IPv4/UDP header is made up for each row: the
// ECN field and total length from the trace, the flow id as the source
// port, addresses from the benchmarking range (RFC 2544, 198.18.0.0/15),
// so analyze and Wireshark can read the file. Replay with
// Config.KeepFrames to capture a capture input's own bytes.
type CaptureWriter struct {
	c    *pcap.Capture
	taps pcap.Taps
	hdr  [28]byte
}

// NewCaptureWriter adds the replay's taps to c.
func NewCaptureWriter(c *pcap.Capture) *CaptureWriter {
	return &CaptureWriter{c: c, taps: c.AddTaps("replay")}
}

// packet returns the bytes to capture for p: its frame, or a made-up header.
func (w *CaptureWriter) packet(p *Packet, ecn aqm.ECN) []byte {
	if p.Frame != nil {
		return p.Frame[:p.CapLen]
	}
	return synthHeader(w.hdr[:], p.Len, ecn, p.Flow)
}

// Arrival implements Handler.
func (w *CaptureWriter) Arrival(p *Packet) error {
	w.c.OfferWait(w.taps.In, p.Time, w.packet(p, p.ECN), int(p.Len), nil)
	return nil
}

// Depart implements Handler.
func (w *CaptureWriter) Depart(p *Packet, ev *shaper.Event) error {
	w.decided(w.taps.Out, p, ev)
	return nil
}

// Drop implements Handler.
func (w *CaptureWriter) Drop(p *Packet, ev *shaper.Event, _ DropPoint) error {
	w.decided(w.taps.Drop, p, ev)
	return nil
}

// Update implements Handler: a capture has no place for queue updates.
func (w *CaptureWriter) Update(int64, *aqm.Stats) error { return nil }

func (w *CaptureWriter) decided(id int, p *Packet, ev *shaper.Event) {
	ecn := ev.ECNOut()
	pkt := w.packet(p, ecn)
	if h := aqm.Header(pkt); p.Frame != nil && ev.DSOut(h.DSField()) != h.DSField() {
		// A capture input: mark (or fault) a copy, as PcapWriter does,
		// so both agree.
		pkt = append(w.hdr[:0:0], pkt...)
		aqm.Header(pkt).SetDSField(ev.DSOut(h.DSField()))
	}
	a := pcap.EventAnnotation(ev)
	w.c.OfferWait(id, ev.At, pkt, int(p.Len), &a)
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

// PcapWriter writes the delivered packets of a capture input as they
// leave the delay line: raw IP with ns timestamps (what a TUN hop
// writes), CE set where the AQM marked them (the IPv4 checksum updated),
// nothing else changed. Replay with Config.KeepFrames; packets without
// bytes (CSV rows) are not written.
type PcapWriter struct {
	w     *pcap.RawWriter
	start int64  // Unix ns of virtual time 0
	name  string // prefixes errors
	buf   []byte
	// file and bw are set by CreatePcap: Close flushes and closes them.
	file *os.File
	bw   *bufio.Writer
}

// CreatePcap creates the new file path for owner (as a capture: see
// invoker.User.Create) and starts a PcapWriter on it (see NewPcapWriter),
// buffered; Close flushes and closes it. Errors start with name, and after
// the file is open with name and path.
func CreatePcap(path string, owner invoker.User, start int64, name string) (*PcapWriter, error) {
	f, err := owner.Create(path, invoker.ModeCapture)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	w, err := NewPcapWriter(bw, start, name+" "+path)
	if err != nil {
		f.Close()
		return nil, err
	}
	w.file, w.bw = f, bw
	return w, nil
}

// Close flushes and closes the file of CreatePcap; it does nothing for a
// writer of NewPcapWriter, whose io.Writer is the caller's.
func (w *PcapWriter) Close() error {
	if w.file == nil {
		return nil
	}
	err := w.bw.Flush()
	if cerr := w.file.Close(); err == nil {
		err = cerr
	}
	w.file = nil
	if err != nil {
		return fmt.Errorf("%s: %w", w.name, err)
	}
	return nil
}

// NewPcapWriter writes the file header to w. start is the Unix time in
// ns of virtual time 0 (CaptureSource.Start); name prefixes errors.
func NewPcapWriter(w io.Writer, start int64, name string) (*PcapWriter, error) {
	rw, err := pcap.NewRawWriter(w)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &PcapWriter{w: rw, start: start, name: name}, nil
}

// Depart implements Handler.
func (w *PcapWriter) Depart(p *Packet, ev *shaper.Event) error {
	if p.Frame == nil {
		return nil
	}
	w.buf = append(w.buf[:0], p.Frame...)
	// The AQM's CE mark and a path fault's rewrite, as the hop writes them.
	h := aqm.Header(w.buf)
	h.SetDSField(ev.DSOut(h.DSField()))
	if err := w.w.WritePacket(w.start+ev.At, w.buf[:p.CapLen], len(w.buf)); err != nil {
		return fmt.Errorf("%s: %w", w.name, err)
	}
	return nil
}

// Arrival implements Handler: only departures are written.
func (w *PcapWriter) Arrival(*Packet) error { return nil }

// Drop implements Handler: dropped packets are not written.
func (w *PcapWriter) Drop(*Packet, *shaper.Event, DropPoint) error { return nil }

// Update implements Handler.
func (w *PcapWriter) Update(int64, *aqm.Stats) error { return nil }
