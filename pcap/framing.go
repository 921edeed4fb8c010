package pcap

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/gopacket/gopacket/layers"
)

// Lengths in a capture file come from whoever wrote it. Both readers
// below check every length against a bound before they allocate for it,
// skip (and count) records over the bound by discarding their bytes
// through the buffered reader, and report a file cut short (a writer
// killed mid-block, a full disk) as a Truncation after its last complete
// record instead of an error.

// MaxRecord bounds a record's captured and original length: libpcap's
// MAXIMUM_SNAPLEN (262144), the most tcpdump or Wireshark take. A longer
// record is not a packet anyone captured; it is skipped, never allocated.
const MaxRecord = 256 << 10

// maxBlock bounds a pcapng block: a record of MaxRecord bytes plus room
// for its options (pi2hop's annotation is one short comment). Section and
// interface blocks are far smaller.
const maxBlock = MaxRecord + 64<<10

// Truncation says how a capture file that ends mid-record was cut.
type Truncation struct {
	// Bytes after the end of the last complete record or block.
	Bytes int64 `json:"bytes"`
	// Partial names what the cut ended: "record header", "record",
	// "block header" or "block".
	Partial string `json:"partial"`
}

func (t *Truncation) String() string {
	return fmt.Sprintf("the file ends %d bytes into a %s (cut while being written?); read up to the last complete one", t.Bytes, t.Partial)
}

// classicReader reads the classic pcap format (libpcap's savefile,
// pcap-savefile(5)): a 24-byte file header and records of a 16-byte header
// and the captured bytes.
type classicReader struct {
	br       *bufio.Reader
	order    binary.ByteOrder
	nanos    bool // nanosecond timestamps (magic a1b23c4d)
	snaplen  uint32
	linkType layers.LinkType
	hdr      [16]byte
	buf      []byte // grows up to MaxRecord
	oversize int
	trunc    *Truncation
}

func newClassicReader(br *bufio.Reader) (*classicReader, error) {
	var h [24]byte
	if n, err := io.ReadFull(br, h[:]); err != nil {
		return nil, fmt.Errorf("file header is %d of 24 bytes", n)
	}
	c := &classicReader{br: br}
	switch binary.LittleEndian.Uint32(h[:4]) {
	case 0xa1b2c3d4:
		c.order = binary.LittleEndian
	case 0xd4c3b2a1:
		c.order = binary.BigEndian
	case 0xa1b23c4d:
		c.order, c.nanos = binary.LittleEndian, true
	case 0x4d3cb2a1:
		c.order, c.nanos = binary.BigEndian, true
	default:
		return nil, fmt.Errorf("magic %#08x is neither pcap's nor pcapng's", binary.LittleEndian.Uint32(h[:4]))
	}
	if major := c.order.Uint16(h[4:]); major != 2 {
		return nil, fmt.Errorf("pcap version %d.%d: want 2.x", major, c.order.Uint16(h[6:]))
	}
	c.snaplen = c.order.Uint32(h[16:])
	// The link type is the low 16 bits; the upper ones may carry the FCS
	// length (draft-ietf-opsawg-pcap §4), as libpcap's LT_LINKTYPE masks.
	c.linkType = layers.LinkType(c.order.Uint32(h[20:]) & 0xffff)
	return c, nil
}

// next returns the next record: data valid until the next call, the
// original length and the timestamp in ns. io.EOF ends the file, also
// after a truncation (see trunc).
func (c *classicReader) next() (data []byte, origLen int, ts int64, err error) {
	for {
		n, err := io.ReadFull(c.br, c.hdr[:])
		if err != nil {
			if n > 0 {
				c.trunc = &Truncation{Bytes: int64(n), Partial: "record header"}
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, 0, 0, io.EOF
			}
			return nil, 0, 0, err
		}
		sec, frac := c.order.Uint32(c.hdr[0:]), c.order.Uint32(c.hdr[4:])
		capLen, orig := c.order.Uint32(c.hdr[8:]), c.order.Uint32(c.hdr[12:])
		if capLen > MaxRecord || orig > MaxRecord {
			// Discard through the bufio buffer: no allocation, whatever
			// the claim.
			c.oversize++
			d, err := discard(c.br, int64(capLen))
			if err != nil {
				if d < int64(capLen) {
					c.trunc = &Truncation{Bytes: 16 + d, Partial: "record"}
				}
				return nil, 0, 0, eofOr(err)
			}
			continue
		}
		if cap(c.buf) < int(capLen) {
			c.buf = make([]byte, capLen, max(capLen, min(c.snaplen, MaxRecord), 2048))
		}
		data = c.buf[:capLen]
		if m, err := io.ReadFull(c.br, data); err != nil {
			c.trunc = &Truncation{Bytes: 16 + int64(m), Partial: "record"}
			return nil, 0, 0, eofOr(err)
		}
		ts = int64(sec) * 1e9
		if c.nanos {
			ts += int64(frac)
		} else {
			ts += int64(frac) * 1e3
		}
		return data, int(max(orig, capLen)), ts, nil
	}
}

// discard skips n bytes in bounded steps (bufio.Reader.Discard takes an
// int; a claimed length may not fit one on 32-bit machines).
func discard(br *bufio.Reader, n int64) (int64, error) {
	var done int64
	for done < n {
		step := int(min(n-done, 1<<30))
		d, err := br.Discard(step)
		done += int64(d)
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

func eofOr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return io.EOF
	}
	return err
}

// pcapng block types (pcapng draft, section 11.1).
const (
	ngSHB = 0x0a0d0d0a
	ngIDB = 0x00000001
	ngPB  = 0x00000002 // obsolete Packet Block
	ngSPB = 0x00000003
	ngISB = 0x00000005
	ngEPB = 0x00000006
)

// ngFramer cuts a pcapng stream into whole blocks and serves only those
// to gopacket's NgReader, which parses their content (interfaces,
// timestamp resolution, options) but trusts every length it reads. The
// framer checks the lengths first: a block that is cut off ends the file
// (a Truncation), a packet block claiming more than MaxRecord bytes or
// whose fields do not fit its block is skipped, and blocks the reader
// does not use (name resolution, decryption secrets, custom) are left
// out. So NgReader never reads past the block it is in.
type ngFramer struct {
	br        *bufio.Reader
	order     binary.ByteOrder
	buf       []byte // the current block
	off       int    // how much of buf NgReader has read
	pos       int64  // file offset of the next block, for errors
	snaplen   uint32 // of the section's first interface, for simple packets
	ifaces    int
	oversize  int // packet blocks over MaxRecord
	malformed int // blocks whose fields do not fit them
	trunc     *Truncation
	err       error // a framing error: the rest of the file is unreadable
}

func (f *ngFramer) Read(p []byte) (int, error) {
	for f.off == len(f.buf) {
		if f.err != nil {
			return 0, f.err
		}
		if err := f.nextBlock(); err != nil {
			if !errors.Is(err, io.EOF) {
				f.err = err
			} else {
				f.err = io.EOF
			}
			return 0, f.err
		}
	}
	n := copy(p, f.buf[f.off:])
	f.off += n
	return n, nil
}

func (f *ngFramer) nextBlock() error {
	for {
		// Every block has at least type, length and trailing length.
		head, err := f.br.Peek(12)
		if len(head) < 12 {
			if len(head) > 0 {
				f.trunc = &Truncation{Bytes: int64(len(head)), Partial: "block header"}
			}
			return eofOr(err)
		}
		if binary.LittleEndian.Uint32(head) == ngSHB {
			switch {
			case binary.LittleEndian.Uint32(head[8:]) == 0x1a2b3c4d:
				f.order = binary.LittleEndian
			case binary.BigEndian.Uint32(head[8:]) == 0x1a2b3c4d:
				f.order = binary.BigEndian
			default:
				return fmt.Errorf("section header at byte %d: byte-order magic %#x is wrong", f.pos, head[8:12])
			}
			f.snaplen, f.ifaces = 0, 0
		} else if f.order == nil {
			return fmt.Errorf("byte %d: pcapng file does not start with a section header", f.pos)
		}
		typ, total := f.order.Uint32(head), f.order.Uint32(head[4:])
		if total < 12 || total%4 != 0 {
			return fmt.Errorf("block at byte %d: length %d is not a multiple of 4 of at least 12: the file is damaged", f.pos, total)
		}
		keep := typ == ngSHB || typ == ngIDB || typ == ngEPB || typ == ngSPB || typ == ngPB || typ == ngISB
		if !keep || total > maxBlock {
			if keep && typ != ngEPB && typ != ngSPB && typ != ngPB {
				return fmt.Errorf("block of type %#x at byte %d claims %d bytes, over the %d-byte bound", typ, f.pos, total, maxBlock)
			}
			if keep {
				f.oversize++
			}
			d, err := discard(f.br, int64(total))
			f.pos += d
			if err != nil {
				f.trunc = &Truncation{Bytes: d, Partial: "block"}
				return eofOr(err)
			}
			continue
		}
		if cap(f.buf) < int(total) {
			f.buf = make([]byte, total, max(total, 4096))
		}
		f.buf, f.off = f.buf[:total], 0
		if n, err := io.ReadFull(f.br, f.buf); err != nil {
			f.trunc = &Truncation{Bytes: int64(n), Partial: "block"}
			f.buf = f.buf[:0]
			return eofOr(err)
		}
		f.pos += int64(total)
		if trail := f.order.Uint32(f.buf[total-4:]); trail != total {
			return fmt.Errorf("block at byte %d: trailing length %d differs from the leading %d: the file is damaged", f.pos-int64(total), trail, total)
		}
		switch ok, over := f.check(typ, f.buf); {
		case over:
			f.oversize++
		case !ok && (typ == ngSHB || typ == ngIDB):
			// Skipping it would renumber the interfaces after it.
			return fmt.Errorf("block of type %#x at byte %d does not hold its own fields: the file is damaged", typ, f.pos-int64(total))
		case !ok:
			f.malformed++
		default:
			if typ == ngIDB {
				if f.ifaces == 0 {
					f.snaplen = f.order.Uint32(f.buf[12:])
				}
				f.ifaces++
			}
			return nil
		}
	}
}

// check reports whether block b's fields fit inside it (ok), and whether
// it is a packet block whose lengths exceed MaxRecord (over).
func (f *ngFramer) check(typ uint32, b []byte) (ok, over bool) {
	body := b[8 : len(b)-4]
	u32 := func(i int) uint32 { return f.order.Uint32(body[i:]) }
	optsAt := -1
	switch typ {
	case ngSHB:
		if len(body) < 16 {
			return false, false
		}
		optsAt = 16
	case ngIDB:
		if len(body) < 8 {
			return false, false
		}
		optsAt = 8
	case ngEPB, ngPB:
		if len(body) < 20 {
			return false, false
		}
		capLen, orig := u32(12), u32(16)
		if capLen > MaxRecord || orig > MaxRecord {
			return false, true
		}
		ifc := int(u32(0))
		if typ == ngPB {
			ifc = int(f.order.Uint16(body))
		}
		if ifc >= f.ifaces || int(capLen) > len(body)-20 {
			return false, false
		}
		optsAt = 20 + int(capLen+3)&^3
		if optsAt > len(body) {
			return false, false
		}
	case ngSPB:
		if len(body) < 4 {
			return false, false
		}
		orig := u32(0)
		if orig > MaxRecord {
			return false, true
		}
		capLen := orig
		if f.snaplen != 0 && capLen > f.snaplen {
			capLen = f.snaplen
		}
		if f.ifaces == 0 || int(capLen) > len(body)-4 {
			return false, false
		}
	case ngISB:
		if len(body) < 12 || int(u32(0)) >= f.ifaces {
			return false, false
		}
		optsAt = 12
	}
	if optsAt >= 0 && !optionsFit(f.order, body[optsAt:]) {
		return false, false
	}
	return true, false
}

// optionsFit walks a block's options (code, length, value padded to 4)
// and reports whether each one fits the block.
func optionsFit(order binary.ByteOrder, b []byte) bool {
	for len(b) > 0 {
		if len(b) < 4 {
			return false
		}
		code, n := order.Uint16(b), int(order.Uint16(b[2:]))
		if code == 0 { // opt_endofopt: NgReader refuses one with a value
			return n == 0
		}
		step := 4 + (n+3)&^3
		if step > len(b) {
			return false
		}
		b = b[step:]
	}
	return true
}
