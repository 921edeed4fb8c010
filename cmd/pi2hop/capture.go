package main

import (
	"fmt"

	"github.com/pi2hop/pi2hop/hop"
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

// annotation is what a capture says of a packet the queue decided on.
func annotation(ev *shaper.Event) pcap.Annotation {
	var sojourn int64
	if ev.Deq != 0 {
		sojourn = ev.Deq - ev.Meta.Arrival
	}
	return pcap.Annotation{
		Class:       ev.Verdict.Class,
		Sojourn:     sojourn,
		Prob:        ev.Prob,
		Verdict:     ev.Verdict,
		ECNIn:       ev.Meta.ECN,
		HasDecision: true,
	}
}

// captureTap feeds a hop's in/out/drop taps into a capture. It runs on the
// hop's owner threads: Offer never blocks and copies what it keeps; when
// the writer falls behind, capture records are dropped (and counted in
// the file's interface statistics), never packets.
type captureTap struct {
	c   *pcap.Capture
	ids [2][3]int // [hop.Dir][hop.TapPoint]
}

func newCaptureTap(c *pcap.Capture) *captureTap { return newCaptureTapNamed(c, "") }

// newCaptureTapNamed names the taps prefix+"up-in" and so on, so several
// hops (the lab's runs) can share one file; analyze then reports each
// prefix+direction apart.
func newCaptureTapNamed(c *pcap.Capture, prefix string) *captureTap {
	t := &captureTap{c: c}
	for _, d := range []hop.Dir{hop.Up, hop.Down} {
		taps := c.AddTaps(prefix + d.String())
		t.ids[d] = [3]int{hop.TapIn: taps.In, hop.TapOut: taps.Out, hop.TapDrop: taps.Drop}
	}
	return t
}

func (t *captureTap) Packet(d hop.Dir, p hop.TapPoint, at int64, pkt []byte, ev *shaper.Event) {
	if ev == nil {
		t.c.Offer(t.ids[d][p], at, pkt, nil)
		return
	}
	a := annotation(ev)
	t.c.Offer(t.ids[d][p], at, pkt, &a)
}
