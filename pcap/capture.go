package pcap

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pi2hop/pi2hop/invoker"
)

// Options configures a Capture. The zero value is usable.
type Options struct {
	// Snaplen is how many bytes of each packet are kept (from the IP
	// header on). 0 means 128: IP and transport headers with options.
	Snaplen int
	// MaxSize rotates the file before it would grow past this many bytes:
	// FILE, then FILE.1, FILE.2, ... each a complete pcapng file with its
	// own section header, interfaces and statistics. 0 = one file.
	MaxSize int64
	// BufferRecords is how many packets may wait for the writer. When
	// that many are waiting, Offer refuses and counts a capture drop.
	// 0 means 8192. Rounded up to a power of two, then halved while the
	// records would need more than BufferBytes.
	BufferRecords int
	// BufferBytes bounds the memory of the waiting records (Snaplen bytes
	// each, and their bookkeeping), allocated up front: 0 means 16 MiB.
	// So a large Snaplen buys fewer records, not more memory: 8192 at the
	// default 128 bytes, 32 at 262144.
	BufferBytes int64
	// Comment and Application go into each section header (shb_comment,
	// shb_userappl); Wireshark shows them under Statistics → Capture File
	// Properties. Application defaults to "pi2hop".
	Comment     string
	Application string
	// TimeOffset is added to every time given to Offer, so callers can
	// pass monotonic or virtual ns (the hop, replay) and still get wall
	// clock timestamps in the file. 0 when at is already Unix ns.
	TimeOffset int64
	// Owner is who the files belong to (the user behind sudo): each is
	// created new (never through a symlink, never over an existing
	// file, rotation included) with mode 0600 and given to Owner.
	Owner invoker.User
}

const (
	defaultSnaplen = 128
	maxSnaplen     = 262144 // libpcap's MAXIMUM_SNAPLEN
	defaultRecords = 8192
	maxRecords     = 1 << 22
	defaultBytes   = 16 << 20
	maxBytes       = 1 << 30
	minMaxSize     = 4096
	// MaxInterfaces is how many taps one Capture can have.
	MaxInterfaces = 64
)

// Capture writes packets offered from any number of goroutines into a
// pcapng file, one interface (LINKTYPE_RAW, ns timestamps) per tap. It is
// safe for concurrent use.
type Capture struct {
	opt   Options
	path  string
	start time.Time
	ring  *ring

	ifMu   sync.Mutex
	ifName []string // by interface id; appended under ifMu
	nIf    atomic.Int32
	// Per interface: packets refused because the writer was behind (or
	// failed), and packets written. written is only stored by the writer.
	dropped [MaxInterfaces]atomic.Uint64
	written [MaxInterfaces]atomic.Uint64

	sleeping atomic.Bool   // the writer waits for wake
	wake     chan struct{} // capacity 1
	closing  atomic.Bool
	done     chan struct{} // closed when the writer has finished
	once     sync.Once
	err      error // the writer's first error; read after done

	w *fileWriter // owned by the writer goroutine
}

// OptionError is a capture or analysis option out of its range. Option
// is spelt as the CLI's flag ("bin", "coupling", ...), so the CLI can
// name it.
type OptionError struct {
	Option string
	Value  string // as given
	Want   string // the accepted range
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("%s %s: must be %s", e.Option, e.Value, e.Want)
}

// Validate checks the snaplen and rotation size as a CLI gives them: an
// explicit snaplen of 0 is refused rather than defaulted, a MaxSize of 0
// means no rotation. The error is an *OptionError naming the capture
// flags (snaplen, capture-max-size).
func (opt Options) Validate() error {
	if opt.Snaplen < 1 || opt.Snaplen > maxSnaplen {
		return &OptionError{Option: "snaplen", Value: strconv.Itoa(opt.Snaplen), Want: fmt.Sprintf("in 1..%d bytes", maxSnaplen)}
	}
	if opt.MaxSize != 0 && opt.MaxSize < minMaxSize {
		return &OptionError{Option: "capture-max-size", Value: strconv.FormatInt(opt.MaxSize, 10), Want: fmt.Sprintf("at least %d bytes", minMaxSize)}
	}
	return nil
}

// NewCapture creates path (a new file: see Options.Owner) and starts the
// writer. Close must be called to complete the file.
func NewCapture(path string, opt Options) (*Capture, error) {
	c, err := newCapture(path, opt)
	if err != nil {
		return nil, err
	}
	go c.run()
	return c, nil
}

// newCapture is NewCapture without the writer: tests start it (go c.run())
// when they have measured Offer alone.
func newCapture(path string, opt Options) (*Capture, error) {
	switch {
	case opt.Snaplen == 0:
		opt.Snaplen = defaultSnaplen
	case opt.Snaplen < 0 || opt.Snaplen > maxSnaplen:
		return nil, fmt.Errorf("capture %s: snaplen %d not in 1..%d bytes", path, opt.Snaplen, maxSnaplen)
	}
	switch {
	case opt.BufferRecords == 0:
		opt.BufferRecords = defaultRecords
	case opt.BufferRecords < 0 || opt.BufferRecords > maxRecords:
		return nil, fmt.Errorf("capture %s: buffer of %d records not in 1..%d", path, opt.BufferRecords, maxRecords)
	}
	switch {
	case opt.BufferBytes == 0:
		opt.BufferBytes = defaultBytes
	case opt.BufferBytes < 0 || opt.BufferBytes > maxBytes:
		return nil, fmt.Errorf("capture %s: buffer of %d bytes not in 1..%d", path, opt.BufferBytes, maxBytes)
	}
	slots := ringSlots(opt.BufferRecords, opt.BufferBytes, opt.Snaplen)
	if slots == 0 {
		return nil, fmt.Errorf("capture %s: a buffer of %d bytes cannot hold one record of snaplen %d (%d bytes with its bookkeeping)", path, opt.BufferBytes, opt.Snaplen, recordBytes(opt.Snaplen))
	}
	if opt.MaxSize != 0 && opt.MaxSize < minMaxSize {
		return nil, fmt.Errorf("capture %s: max size %d bytes: must be 0 (no rotation) or >= %d", path, opt.MaxSize, minMaxSize)
	}
	if opt.Application == "" {
		opt.Application = "pi2hop"
	}
	f, err := opt.Owner.Create(path, invoker.ModeCapture)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	c := &Capture{
		opt:   opt,
		path:  path,
		start: time.Now(),
		ring:  newRing(slots, opt.Snaplen),
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
	c.w = newFileWriter(c, f)
	return c, nil
}

// AddInterface adds a tap and returns its id for Offer. Name it
// "<direction>-<point>" (up-in, up-out, up-drop, down-in, ...): analysis
// reads the roles from the name. It returns -1 after MaxInterfaces taps;
// Offer refuses id -1. Taps may be added while packets flow.
func (c *Capture) AddInterface(name string) int {
	c.ifMu.Lock()
	defer c.ifMu.Unlock()
	if len(c.ifName) == MaxInterfaces {
		return -1
	}
	c.ifName = append(c.ifName, name)
	c.nIf.Store(int32(len(c.ifName)))
	return len(c.ifName) - 1
}

// Taps are the interface ids of one direction's three capture points.
type Taps struct{ In, Out, Drop int }

// AddTaps adds dir-in, dir-out and dir-drop.
func (c *Capture) AddTaps(dir string) Taps {
	return Taps{
		In:   c.AddInterface(dir + "-in"),
		Out:  c.AddInterface(dir + "-out"),
		Drop: c.AddInterface(dir + "-drop"),
	}
}

// Offer queues a copy of up to Snaplen bytes of pkt, taken at time at
// (ns; Options.TimeOffset is added), on interface iface, with an optional
// annotation (copied; nil for none). It never blocks and does not
// allocate: when the writer is behind it returns false and counts a
// capture drop, written later as the interface's isb_ifdrop. It returns
// false without counting after Close and for an unknown iface.
func (c *Capture) Offer(iface int, at int64, pkt []byte, ann *Annotation) bool {
	if iface < 0 || iface >= int(c.nIf.Load()) {
		return false
	}
	rec, pos, ok := c.ring.claim()
	if !ok {
		if !c.closing.Load() {
			c.dropped[iface].Add(1)
		}
		return false
	}
	c.fill(rec, iface, at, pkt, ann)
	c.ring.publish(rec, pos)
	c.wakeWriter()
	return true
}

// OfferWait is Offer for offline producers (replay): instead of refusing
// when the writer is behind, it waits for room, so the file holds every
// packet. origLen is the packet's length on the wire when pkt holds only
// its headers (0: len(pkt)). It returns false only after Close or for an
// unknown iface. Never call it on a live data path.
func (c *Capture) OfferWait(iface int, at int64, pkt []byte, origLen int, ann *Annotation) bool {
	if iface < 0 || iface >= int(c.nIf.Load()) {
		return false
	}
	for {
		rec, pos, ok := c.ring.claim()
		if ok {
			c.fill(rec, iface, at, pkt, ann)
			if origLen > len(pkt) {
				rec.origLen = int32(origLen)
			}
			c.ring.publish(rec, pos)
			c.wakeWriter()
			return true
		}
		if c.closing.Load() {
			return false
		}
		c.wakeWriter()
		time.Sleep(20 * time.Microsecond)
	}
}

func (c *Capture) fill(rec *record, iface int, at int64, pkt []byte, ann *Annotation) {
	rec.at = at + c.opt.TimeOffset
	rec.iface = int32(iface)
	rec.origLen = int32(len(pkt))
	rec.capLen = int32(copy(rec.data, pkt))
	rec.hasAnn = ann != nil
	if ann != nil {
		rec.ann = *ann
	}
}

func (c *Capture) wakeWriter() {
	if c.sleeping.Load() && c.sleeping.CompareAndSwap(true, false) {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// InterfaceStats counts one tap's packets.
type InterfaceStats struct {
	Name    string
	Written uint64 // packets in the file(s)
	Dropped uint64 // packets refused by Offer: the writer was behind
}

// Stats returns the per-interface counters so far.
func (c *Capture) Stats() []InterfaceStats {
	c.ifMu.Lock()
	defer c.ifMu.Unlock()
	s := make([]InterfaceStats, len(c.ifName))
	for i, n := range c.ifName {
		s[i] = InterfaceStats{Name: n, Written: c.written[i].Load(), Dropped: c.dropped[i].Load()}
	}
	return s
}

// Files returns the files written so far, in order.
func (c *Capture) Files() []string {
	n := c.w.files.Load()
	out := make([]string, n)
	for i := range out {
		out[i] = rotatedName(c.path, i)
	}
	return out
}

// rotatedName is FILE for the first file, then FILE.1, FILE.2, ...
func rotatedName(path string, i int) string {
	if i == 0 {
		return path
	}
	return fmt.Sprintf("%s.%d", path, i)
}

// Close stops accepting packets, writes every packet already accepted,
// the interface statistics, and flushes and closes the file. It is
// idempotent and safe to call from any goroutine (a signal handler's
// too); every call returns the first error the writer met.
func (c *Capture) Close() error {
	c.once.Do(func() {
		c.closing.Store(true)
		c.ring.close()
		select {
		case c.wake <- struct{}{}:
		default:
		}
	})
	<-c.done
	return c.err
}
