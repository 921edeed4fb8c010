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
type CaptureSource struct {
	r       *pcap.Reader
	start   int64 // Unix ns of the first IP packet: virtual time 0
	last    int64
	clamped int // timestamps moved forward to keep time monotonic
	n       int // IP packets handed out, for errors

	first    Packet // read ahead by NewCaptureSource, to know start
	hasFirst bool
	pad      []byte // the current packet when it had to be padded
}

// maxIPLen is the largest IP packet the link model takes (IPv4's total
// length field; IPv6 jumbograms are not replayed as such).
const maxIPLen = 65535

// NewCaptureSource reads a capture from rd; name (a file name, or
// "stdin") prefixes errors. It reads the first IP packet at once, so that
// Start is known before the replay runs.
func NewCaptureSource(rd io.Reader, name string) (*CaptureSource, error) {
	r, err := pcap.NewReader(rd, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := &CaptureSource{r: r}
	p, err := c.read()
	if err != nil || p == nil {
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
	if err != nil || cp == nil {
		return false, err
	}
	c.fill(p, cp)
	return true, nil
}

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
