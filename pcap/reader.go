package pcap

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Packet is one IP packet read from a capture file.
type Packet struct {
	// Interface is the capture interface's name (a pi2hop tap such as
	// "up-out"); for pcap files and unnamed interfaces, the file's base
	// name, with "#<id>" for interfaces after the first.
	Interface string
	Time      int64  // ns since the Unix epoch
	Data      []byte // captured bytes from the IP header on; valid until the next call to Next
	Length    int    // the IP packet's length on the wire (captured or not)
	// Ann is the packet's pi2hop annotation when HasAnn.
	Ann    Annotation
	HasAnn bool
}

// Reader reads IP packets from a pcap or pcapng file (optionally gzipped),
// as pi2hop or tcpdump writes them: link types RAW, IPv4, IPv6, Ethernet,
// Linux cooked (SLL, SLL2), BSD loopback.
type Reader struct {
	name   string // for errors and default interface names
	format string
	f      io.Closer
	pc     *classicReader
	ng     *pcapgo.NgReader
	frame  *ngFramer // under ng
	// Skipped counts frames that are not IP (ARP, other link types,
	// truncated headers) and BadComments annotations that did not parse.
	Skipped     int
	BadComments int
	// Oversize counts records that claim more than MaxRecord bytes, and
	// Malformed pcapng blocks whose fields do not fit them: both skipped
	// unread.
	Oversize, Malformed int
	// Truncated is set, once Next returned io.EOF, when the file ends
	// inside a record or block: everything before it was read.
	Truncated *Truncation
	stats     map[string]pcapgo.NgInterfaceStatistics
	ifNames   []string // pcapng: names by interface id in the current section
	pkt       Packet
}

// Open opens a capture file. Close it when done.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := NewReader(f, filepath.Base(path))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.f = f
	return r, nil
}

const (
	magicPcapng = 0x0a0d0d0a // section header block type, any byte order
)

// NewReader reads a capture from rd; name stands for the file in
// interface names.
func NewReader(rd io.Reader, name string) (*Reader, error) {
	br := bufio.NewReaderSize(rd, 1<<20)
	head, err := br.Peek(4)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty or truncated file: want a pcap or pcapng capture")
		}
		return nil, err
	}
	if head[0] == 0x1f && head[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		br = bufio.NewReaderSize(gz, 1<<20)
		if head, err = br.Peek(4); err != nil {
			return nil, fmt.Errorf("gzip content: %w", err)
		}
	}
	r := &Reader{name: name, stats: map[string]pcapgo.NgInterfaceStatistics{}}
	if binary.LittleEndian.Uint32(head) == magicPcapng {
		r.format = "pcapng"
		r.frame = &ngFramer{br: br}
		r.ng, err = pcapgo.NewNgReader(r.frame, pcapgo.NgReaderOptions{
			WantMixedLinkType:  true,
			SkipUnknownVersion: true,
			StatisticsCallback: r.onStats,
		})
		if err != nil && r.frame.err != nil && !errors.Is(r.frame.err, io.EOF) {
			err = r.frame.err
		}
	} else {
		r.format = "pcap"
		r.pc, err = newClassicReader(br)
	}
	if err != nil {
		return nil, fmt.Errorf("not a pcap or pcapng capture: %w", err)
	}
	return r, nil
}

// Format is "pcap" or "pcapng".
func (r *Reader) Format() string { return r.format }

// onStats keeps the last statistics block of each interface, by name.
func (r *Reader) onStats(id int, s pcapgo.NgInterfaceStatistics) {
	r.stats[r.ifaceName(id)] = s
}

// InterfaceStats returns the capture statistics found so far (pcapng
// interface statistics blocks; complete after Next returned io.EOF), by
// interface name: packets received and dropped by the capture.
func (r *Reader) InterfaceStats() map[string]pcapgo.NgInterfaceStatistics { return r.stats }

func (r *Reader) ifaceName(id int) string {
	in, err := r.ng.Interface(id)
	if err == nil && in.Name != "" {
		return in.Name
	}
	if id == 0 {
		return r.name
	}
	return fmt.Sprintf("%s#%d", r.name, id)
}

// Interfaces returns the names of the capture's interfaces read so far,
// in file order, as Packet.Interface names them: a pcapng file's
// interface descriptions met before the last packet Next returned (a
// pi2hop capture describes its taps before its first packet), a pcap
// file's one.
func (r *Reader) Interfaces() []string {
	if r.ng == nil {
		return []string{r.name}
	}
	n := r.ng.NInterfaces()
	names := make([]string, n)
	for i := range n {
		names[i] = r.ifaceName(i)
	}
	return names
}

// Next returns the next IP packet, skipping (and counting) frames that
// are not IP. It returns io.EOF at the end of the file. The Packet and its
// Data are reused by the next call.
func (r *Reader) Next() (*Packet, error) {
	for {
		var (
			data []byte
			ci   gopacket.CaptureInfo
			opts pcapgo.NgPacketOptions
			lt   layers.LinkType
			err  error
		)
		var (
			origLen int
			at      int64
		)
		if r.ng != nil {
			data, ci, opts, err = r.ng.ZeroCopyReadPacketDataWithOptions()
			r.Oversize, r.Malformed = r.frame.oversize, r.frame.malformed
			if err == nil {
				lt = ci.AncillaryData[0].(layers.LinkType)
				origLen, at = ci.Length, ci.Timestamp.UnixNano()
			} else if errors.Is(err, io.EOF) {
				// The framer serves whole blocks only, so NgReader sees
				// the end (clean or at a cut) at a block boundary.
				r.Truncated = r.frame.trunc
				return nil, io.EOF
			} else if fe := r.frame.err; fe != nil && !errors.Is(fe, io.EOF) {
				return nil, fmt.Errorf("%s: %w", r.name, fe)
			} else {
				// A complete block whose content NgReader refused.
				return nil, fmt.Errorf("%s: pcapng block before byte %d: %w", r.name, r.frame.pos, err)
			}
		} else {
			data, origLen, at, err = r.pc.next()
			r.Oversize = r.pc.oversize
			lt = r.pc.linkType
			if err != nil {
				if errors.Is(err, io.EOF) {
					r.Truncated = r.pc.trunc
					return nil, io.EOF
				}
				return nil, fmt.Errorf("%s: %w", r.name, err)
			}
		}
		ip, hdr, ok := stripLink(lt, data)
		if !ok {
			r.Skipped++
			continue
		}
		p := &r.pkt
		p.Data = ip
		// A record may claim less on the wire than it holds; what it holds
		// was on the wire.
		p.Length = max(origLen, len(data)) - hdr
		p.Time = at
		if r.ng != nil {
			p.Interface = r.cachedName(ci.InterfaceIndex)
		} else {
			p.Interface = r.name
		}
		p.HasAnn = false
		for _, c := range opts.Comments {
			if !strings.HasPrefix(c, commentPrefix) {
				continue
			}
			a, err := ParseComment(c)
			if err != nil {
				r.BadComments++
				continue
			}
			p.Ann, p.HasAnn = a, true
			break
		}
		return p, nil
	}
}

// cachedName looks interface names up once per id. A new section may
// reuse ids for other interfaces, so a changed count drops the cache.
func (r *Reader) cachedName(id int) string {
	if n := r.ng.NInterfaces(); n != len(r.ifNames) {
		r.ifNames = r.ifNames[:0]
		for i := range n {
			r.ifNames = append(r.ifNames, r.ifaceName(i))
		}
	}
	if id < len(r.ifNames) {
		return r.ifNames[id]
	}
	return r.ifaceName(id)
}

// Warnings says, one line each, what of the file could not be read:
// complete once Next returned io.EOF.
func (r *Reader) Warnings() []string {
	return ReadWarnings(r.name, r.Oversize, r.Malformed, r.Truncated)
}

// ReadWarnings says, one line each, what of capture file path a Reader
// could not read: records over MaxRecord and malformed blocks (the
// Reader's Oversize and Malformed counts) and a cut-off end.
func ReadWarnings(path string, oversize, malformed int, truncated *Truncation) []string {
	var w []string
	if oversize > 0 {
		w = append(w, fmt.Sprintf("%s: %d %s claiming more than %d bytes (libpcap's largest snap length) skipped unread", path, oversize, plural(oversize, "record"), MaxRecord))
	}
	if malformed > 0 {
		w = append(w, fmt.Sprintf("%s: %d pcapng %s whose fields overrun the block skipped", path, malformed, plural(malformed, "block")))
	}
	if truncated != nil {
		w = append(w, fmt.Sprintf("%s: truncated: %s", path, truncated))
	}
	return w
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// Close closes the file opened by Open.
func (r *Reader) Close() error {
	if r.f != nil {
		return r.f.Close()
	}
	return nil
}
