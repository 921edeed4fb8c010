package pcap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/pcap/pcaptest"
)

// Capture files built byte by byte, so that every length in them is the
// test's choice, including the lying ones.

var le = binary.LittleEndian

// classicHeader is a little-endian, microsecond pcap file header.
func classicHeader(snaplen, linkType uint32) []byte {
	b := make([]byte, 24)
	le.PutUint32(b[0:], 0xa1b2c3d4)
	le.PutUint16(b[4:], 2)
	le.PutUint16(b[6:], 4)
	le.PutUint32(b[16:], snaplen)
	le.PutUint32(b[20:], linkType)
	return b
}

// classicRecord is a record header claiming capLen/origLen, then data.
func classicRecord(sec, usec, capLen, origLen uint32, data []byte) []byte {
	b := make([]byte, 16, 16+len(data))
	le.PutUint32(b[0:], sec)
	le.PutUint32(b[4:], usec)
	le.PutUint32(b[8:], capLen)
	le.PutUint32(b[12:], origLen)
	return append(b, data...)
}

func padTo4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// ngBlock frames body as a pcapng block of type typ.
func ngBlock(typ uint32, body []byte) []byte {
	body = padTo4(body)
	total := uint32(12 + len(body))
	b := make([]byte, 8, total)
	le.PutUint32(b[0:], typ)
	le.PutUint32(b[4:], total)
	b = append(b, body...)
	return le.AppendUint32(b, total)
}

func ngOption(code uint16, v []byte) []byte {
	b := le.AppendUint16(nil, code)
	b = le.AppendUint16(b, uint16(len(v)))
	return padTo4(append(b, v...))
}

func ngSHBBytes() []byte {
	b := le.AppendUint32(nil, 0x1a2b3c4d)
	b = le.AppendUint16(b, 1)
	b = le.AppendUint16(b, 0)
	b = le.AppendUint64(b, ^uint64(0)) // section length unknown
	return ngBlock(ngSHB, b)
}

func ngIDBBytes(linkType uint16, snaplen uint32, name string) []byte {
	b := le.AppendUint16(nil, linkType)
	b = le.AppendUint16(b, 0)
	b = le.AppendUint32(b, snaplen)
	b = append(b, ngOption(2, []byte(name))...) // if_name
	b = append(b, ngOption(0, nil)...)
	return ngBlock(ngIDB, b)
}

// ngEPBBytes is an enhanced packet block with microsecond time us,
// claiming capLen and origLen, holding data and then opts.
func ngEPBBytes(iface uint32, us uint64, capLen, origLen uint32, data, opts []byte) []byte {
	b := le.AppendUint32(nil, iface)
	b = le.AppendUint32(b, uint32(us>>32))
	b = le.AppendUint32(b, uint32(us))
	b = le.AppendUint32(b, capLen)
	b = le.AppendUint32(b, origLen)
	b = padTo4(append(b, data...))
	return ngBlock(ngEPB, append(b, opts...))
}

// ipPacket is a 60-byte IPv4/UDP packet numbered i (in its IP ID).
func ipPacket(i int) []byte {
	return pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 17, SPort: 1000, DPort: 2000, ID: uint32(i), Payload: 32}.Build()
}

type readOut struct {
	times     []int64
	lengths   []int
	oversize  int
	malformed int
	trunc     *Truncation
	err       error
}

func readBytes(t *testing.T, file []byte) readOut {
	t.Helper()
	r, err := NewReader(bytes.NewReader(file), "t")
	if err != nil {
		return readOut{err: err}
	}
	var o readOut
	for {
		p, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			o.err = err
			break
		}
		o.times = append(o.times, p.Time)
		o.lengths = append(o.lengths, p.Length)
	}
	o.oversize, o.malformed, o.trunc = r.Oversize, r.Malformed, r.Truncated
	return o
}

// TestOversizeRecordsSkipped: records that claim more than MaxRecord
// bytes, captured or original, are skipped without reading them into
// memory, and the records after them still read.
func TestOversizeRecordsSkipped(t *testing.T) {
	pkt := ipPacket(1)
	n := uint32(len(pkt))
	big := make([]byte, MaxRecord+1)
	copy(big, pkt) // an IP packet with a long tail
	classic := func(recs ...[]byte) []byte {
		return bytes.Join(append([][]byte{classicHeader(65535, 101)}, recs...), nil)
	}
	ng := func(blocks ...[]byte) []byte {
		head := [][]byte{ngSHBBytes(), ngIDBBytes(101, 65535, "up-in")}
		return bytes.Join(append(head, blocks...), nil)
	}
	good := classicRecord(1, 0, n, n, pkt)
	goodNG := ngEPBBytes(0, 1e6, n, n, pkt, nil)
	for _, tc := range []struct {
		name       string
		file       []byte
		packets    int
		oversize   int
		malformed  int
		truncBytes int64 // -1: not truncated
	}{
		{"pcap: original length 4 GiB", classic(classicRecord(0, 0, n, 0xffffffff, pkt), good), 1, 1, 0, -1},
		{"pcap: captured length 1 over", classic(classicRecord(0, 0, MaxRecord+1, MaxRecord+1, big), good), 1, 1, 0, -1},
		{"pcap: at the bound", classic(classicRecord(0, 0, MaxRecord, MaxRecord, big[:MaxRecord]), good), 2, 0, 0, -1},
		// The claim runs past the end of the file: the 16 header bytes
		// and the 60 that follow are what was cut.
		{"pcap: 4 GiB captured, file ends", classic(classicRecord(0, 0, 0xffffffff, 0xffffffff, pkt)), 0, 1, 0, 16 + int64(n)},
		{"pcapng: original length 4 GiB", ng(ngEPBBytes(0, 0, n, 0xffffffff, pkt, nil), goodNG), 1, 1, 0, -1},
		{"pcapng: captured longer than its block", ng(ngEPBBytes(0, 0, 1000, 1000, pkt, nil), goodNG), 1, 0, 1, -1},
		{"pcapng: interface not declared", ng(ngEPBBytes(3, 0, n, n, pkt, nil), goodNG), 1, 0, 1, -1},
		{"pcapng: option overruns its block", ng(ngEPBBytes(0, 0, n, n, pkt, []byte{1, 0, 200, 0}), goodNG), 1, 0, 1, -1},
		{"pcapng: end of options with a value", ng(ngEPBBytes(0, 0, n, n, pkt, []byte{0, 0, 4, 0, 1, 2, 3, 4}), goodNG), 1, 0, 1, -1},
		{"pcapng: block over the bound", ng(ngEPBBytes(0, 0, MaxRecord, MaxRecord, make([]byte, maxBlock), nil), goodNG), 1, 1, 0, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := readBytes(t, tc.file)
			if o.err != nil {
				t.Fatal(o.err)
			}
			if len(o.times) != tc.packets || o.oversize != tc.oversize || o.malformed != tc.malformed {
				t.Errorf("%d packets, %d oversize, %d malformed; want %d, %d, %d", len(o.times), o.oversize, o.malformed, tc.packets, tc.oversize, tc.malformed)
			}
			for _, l := range o.lengths {
				if l != int(n) && l != MaxRecord {
					t.Errorf("a packet of %d bytes read", l)
				}
			}
			switch {
			case tc.truncBytes < 0 && o.trunc != nil:
				t.Errorf("truncated %+v, want complete", o.trunc)
			case tc.truncBytes >= 0 && (o.trunc == nil || o.trunc.Bytes != tc.truncBytes):
				t.Errorf("truncated %+v, want %d bytes", o.trunc, tc.truncBytes)
			}
		})
	}
}

// TestTruncatedCapture cuts a three-packet capture at every byte of its
// last record: the first two packets are read, and the truncation says
// how many bytes of the last record or block were there.
func TestTruncatedCapture(t *testing.T) {
	var pcapFile, ngFile []byte
	var pcapLast, ngLast int // where the last record starts
	pcapFile = classicHeader(65535, 101)
	ngFile = append(ngSHBBytes(), ngIDBBytes(101, 65535, "up-in")...)
	comment := ngOption(1, []byte("pi2hop a comment that does not parse"))
	for i := range 3 {
		pkt := ipPacket(i)
		n := uint32(len(pkt))
		pcapLast, ngLast = len(pcapFile), len(ngFile)
		pcapFile = append(pcapFile, classicRecord(uint32(i), 0, n, n, pkt)...)
		ngFile = append(ngFile, ngEPBBytes(0, uint64(i)*1e6, n, n, pkt, comment)...)
	}
	for _, tc := range []struct {
		format     string
		file       []byte
		last       int
		headerSize int
		header     string
		body       string
	}{
		{"pcap", pcapFile, pcapLast, 16, "record header", "record"},
		{"pcapng", ngFile, ngLast, 12, "block header", "block"},
	} {
		if o := readBytes(t, tc.file); o.err != nil || len(o.times) != 3 || o.trunc != nil {
			t.Fatalf("%s whole: %d packets, truncated %v, error %v", tc.format, len(o.times), o.trunc, o.err)
		}
		for cut := tc.last + 1; cut < len(tc.file); cut++ {
			o := readBytes(t, tc.file[:cut])
			want := Truncation{Bytes: int64(cut - tc.last), Partial: tc.body}
			if cut-tc.last < tc.headerSize {
				want.Partial = tc.header
			}
			if o.err != nil || len(o.times) != 2 || o.trunc == nil || *o.trunc != want {
				t.Fatalf("%s cut at %d: %d packets, truncated %+v, error %v; want 2 packets, %+v", tc.format, cut, len(o.times), o.trunc, o.err, want)
			}
			if o.times[1] != 1e9 {
				t.Fatalf("%s cut at %d: second packet at %d ns, want 1e9", tc.format, cut, o.times[1])
			}
		}
		// Cut at a record boundary: complete, nothing lost.
		if o := readBytes(t, tc.file[:tc.last]); o.err != nil || len(o.times) != 2 || o.trunc != nil {
			t.Errorf("%s cut at a boundary: %d packets, truncated %v, error %v", tc.format, len(o.times), o.trunc, o.err)
		}
	}
}

// TestFramingErrors: lengths that leave no way to find the next record
// are errors that say where, not a crash or a guess.
func TestFramingErrors(t *testing.T) {
	head := append(ngSHBBytes(), ngIDBBytes(101, 65535, "x")...)
	bad := ngEPBBytes(0, 0, 60, 60, ipPacket(0), nil)
	le.PutUint32(bad[len(bad)-4:], 999)
	odd := ngEPBBytes(0, 0, 60, 60, ipPacket(0), nil)
	le.PutUint32(odd[4:], 13)
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"trailing length differs", append(head, bad...), "trailing length 999"},
		{"length not a multiple of 4", append(head, odd...), "length 13"},
		{"pcap major version", append(classicHeader(0, 101)[:4], make([]byte, 20)...), "version 0"},
		{"huge interface block", append(ngSHBBytes(), ngBlock(ngIDB, make([]byte, maxBlock))...), "over the"},
	} {
		o := readBytes(t, tc.file)
		if o.err == nil || !strings.Contains(o.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, o.err, tc.want)
		}
	}
}

// TestDamagedInterfaceBlock: an interface block whose options overrun it
// is an error, not skipped: skipping it would give every later packet the
// wrong interface.
func TestDamagedInterfaceBlock(t *testing.T) {
	idb := ngIDBBytes(101, 0, "up-in")
	le.PutUint16(idb[16+2:], 200) // if_name (after type, length, link type, snaplen) claims 200 bytes
	file := bytes.Join([][]byte{ngSHBBytes(), idb, ngEPBBytes(0, 0, 60, 60, ipPacket(0), nil)}, nil)
	if o := readBytes(t, file); o.err == nil || !strings.Contains(o.err.Error(), "does not hold its own fields") {
		t.Errorf("error %v, packets %d", o.err, len(o.times))
	}
}
