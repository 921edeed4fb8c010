package replay

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/pcap"
)

// CaptureSource replays the IP packets of a capture, read through
// pcap.Reader: every file `pi2hop analyze` reads (pcap, pcapng, gzipped;
// raw IP, Ethernet, Linux SLL and SLL2, BSD loopback). A packet arrives at
// its capture time relative to the first IP packet; a timestamp earlier
// than its predecessor's (multi-queue captures) is taken as equal to it,
// as virtual time cannot go back. Frames that are not IP are skipped and
// counted.
//
// Of a capture with several interfaces it replays one (ChooseTap): a
// pi2hop capture holds each packet up to three times (as it came in, as
// it left or was dropped), and replaying them all would queue it again
// at each of its taps.
type CaptureSource struct {
	r       *pcap.Reader
	start   int64 // Unix ns of the first IP packet: virtual time 0
	last    int64
	clamped int // timestamps moved forward to keep time monotonic
	n       int // IP packets handed out, for errors

	first    Packet // read ahead by NewCaptureSource, to know start
	hasFirst bool
	pad      []byte // the current packet when it had to be padded

	tap   string // the interface replayed; "" for all (a single-interface capture)
	note  string // why that one (ChooseTap)
	other int    // IP packets of other interfaces, not replayed
}

// maxIPLen is the largest IP packet the link model takes (IPv4's total
// length field; IPv6 jumbograms are not replayed as such).
const maxIPLen = 65535

// NewCaptureSource reads a capture from rd; name (a file name, or
// "stdin") prefixes errors. It reads the first IP packet at once, so that
// Start is known before the replay runs. Of several interfaces it replays
// the one ChooseTap picks with none asked.
func NewCaptureSource(rd io.Reader, name string) (*CaptureSource, error) {
	return NewCaptureSourceTap(rd, name, "")
}

// NewCaptureSourceTap is NewCaptureSource replaying interface tap, or
// with tap "" the one ChooseTap picks. Start is then the first packet of
// that interface.
func NewCaptureSourceTap(rd io.Reader, name, tap string) (*CaptureSource, error) {
	r, err := pcap.NewReader(rd, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := &CaptureSource{r: r}
	p, err := c.read()
	if err != nil || p == nil {
		return c, err
	}
	if c.tap, c.note, err = ChooseTap(r.Interfaces(), tap); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if p, err = c.skipOthers(p); err != nil || p == nil {
		return c, err
	}
	c.start = p.Time
	c.fill(&c.first, p)
	c.first.Frame = append([]byte(nil), c.first.Frame...) // the next read reuses it
	c.hasFirst = true
	return c, nil
}

// Start is the Unix time in ns of the first IP packet, virtual time 0 (0
// for a capture without one).
func (c *CaptureSource) Start() int64 { return c.start }

// Skipped counts the frames that were not IP packets.
func (c *CaptureSource) Skipped() int { return c.r.Skipped }

// Warnings says what of the capture could not be read (records over
// pcap.MaxRecord skipped, a cut-off end), once Next returned false.
func (c *CaptureSource) Warnings() []string { return c.r.Warnings() }

// Clamped counts the timestamps moved forward to keep time monotonic.
func (c *CaptureSource) Clamped() int { return c.clamped }

func (c *CaptureSource) read() (*pcap.Packet, error) {
	p, err := c.r.Next()
	if errors.Is(err, io.EOF) {
		if c.n == 0 && (c.r.Oversize > 0 || c.r.Malformed > 0) {
			// Nothing but damage: a replay of it would look like an
			// empty capture.
			return nil, fmt.Errorf("no packet read: %s", strings.Join(c.r.Warnings(), "; "))
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w (after %d IP packets)", err, c.n)
	}
	c.n++
	return p, nil
}

// Next implements Source.
func (c *CaptureSource) Next(p *Packet) (bool, error) {
	if c.hasFirst {
		*p, c.hasFirst = c.first, false
		return true, nil
	}
	cp, err := c.read()
	if err == nil && cp != nil {
		cp, err = c.skipOthers(cp)
	}
	if err != nil || cp == nil {
		return false, err
	}
	c.fill(p, cp)
	return true, nil
}

// skipOthers reads past the packets of interfaces other than c.tap,
// from p on; nil at the end.
func (c *CaptureSource) skipOthers(p *pcap.Packet) (*pcap.Packet, error) {
	for c.tap != "" && p != nil && p.Interface != c.tap {
		c.other++
		var err error
		if p, err = c.read(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Tap is the interface replayed ("" for all: the capture has one), and
// a note for the user on why it is that one ("" when asked for).
func (c *CaptureSource) Tap() (name, note string) { return c.tap, c.note }

// OtherTaps counts the IP packets of the interfaces not replayed.
func (c *CaptureSource) OtherTaps() int { return c.other }

// ChooseTap picks the interface to replay of a capture's interfaces
// (pcap.Reader.Interfaces): asked, which must be one of them; else all
// of a single-interface capture (""); else, of a pi2hop capture, its first
// "-in" tap, the packets as they came to the hop (a tap X-in beside
// X-out or X-drop); else an error listing them, as mixing the interfaces
// of another tool's capture would replay packets in an order no link saw.
// note says which tap was chosen and why, for the user.
func ChooseTap(ifaces []string, asked string) (tap, note string, err error) {
	list := strings.Join(ifaces, ", ")
	switch {
	case asked != "" && slices.Contains(ifaces, asked):
		return asked, "", nil
	case asked != "":
		return "", "", &TapError{fmt.Sprintf("no interface %q in the capture; it has %s", asked, list)}
	case len(ifaces) <= 1:
		return "", "", nil
	}
	for _, n := range ifaces {
		dir, ok := strings.CutSuffix(n, "-in")
		if ok && (slices.Contains(ifaces, dir+"-out") || slices.Contains(ifaces, dir+"-drop")) {
			return n, fmt.Sprintf("replaying tap %s only, the packets as they came to the hop (the capture's taps: %s); choose another with --tap", n, list), nil
		}
	}
	return "", "", &TapError{fmt.Sprintf("the capture has %d interfaces (%s) and no pi2hop taps: choose the one to replay with --tap", len(ifaces), list)}
}

// TapError is a capture whose interface to replay ChooseTap cannot pick.
type TapError struct{ Msg string }

func (e *TapError) Error() string { return e.Msg }

// fill turns a captured packet into a replay packet.
func (c *CaptureSource) fill(p *Packet, cp *pcap.Packet) {
	ip := cp.Data
	if wire := min(cp.Length, maxIPLen); wire > len(ip) {
		// Truncated capture (snaplen): pad to the length on the wire so
		// the header's lengths hold and the packet occupies the link as
		// long as the real one did.
		c.pad = slices.Grow(c.pad[:0], wire)[:wire]
		clear(c.pad[copy(c.pad, ip):])
		ip = c.pad
	}
	t := cp.Time - c.start
	if t < c.last {
		t = c.last
		c.clamped++
	}
	c.last = t
	v := aqm.Header(ip)
	size := v.Len()
	if size == 0 { // not a well-formed IP header: Classic Not-ECT, as is
		size = len(ip)
	}
	*p = Packet{
		Time: t, Len: int32(min(size, maxIPLen)), ECN: v.ECN(), Flow: v.FlowHash(), DSCP: v.DSCP(),
		Frame: ip, CapLen: len(cp.Data),
	}
}
