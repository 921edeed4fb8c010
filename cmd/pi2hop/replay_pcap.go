package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/pi2hop/pi2hop/aqm"
)

// pcapTrace reads the packets of a pcap or pcapng capture for replay.
// A packet arrives at its capture timestamp relative to the first packet;
// a timestamp earlier than its predecessor's (multi-queue captures) is
// taken as equal to it, as virtual time cannot go back. Link types: raw IP
// (RAW, IPv4, IPv6), Ethernet and Linux cooked (SLL) with an IPv4/IPv6
// payload (VLAN tags skipped); other frames are skipped and counted.
type pcapTrace struct {
	read     func() ([]byte, gopacket.CaptureInfo, error)
	linkType func(ci gopacket.CaptureInfo) layers.LinkType
	name     string
	n        int       // packets read, for errors
	start    time.Time // timestamp of the first IP packet: virtual time 0
	started  bool
	last     int64
	skipped  int // frames that are not IP
	clamped  int // timestamps moved forward to keep time monotonic
}

// pcapngMagic is the block type of a pcapng Section Header Block.
var pcapngMagic = []byte{0x0a, 0x0d, 0x0d, 0x0a}

func newPCAPTrace(r io.Reader, name string) (*pcapTrace, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, err := br.Peek(4)
	if err != nil {
		return nil, fmt.Errorf("%s: not a pcap or pcapng file (%v)", name, err)
	}
	p := &pcapTrace{name: name}
	if string(magic) == string(pcapngMagic) {
		ng, err := pcapgo.NewNgReader(br, pcapgo.NgReaderOptions{WantMixedLinkType: true})
		if err != nil {
			return nil, fmt.Errorf("%s: pcapng: %v", name, err)
		}
		p.read = ng.ReadPacketData
		p.linkType = func(ci gopacket.CaptureInfo) layers.LinkType {
			if len(ci.AncillaryData) > 0 {
				if lt, ok := ci.AncillaryData[0].(layers.LinkType); ok {
					return lt
				}
			}
			return ng.LinkType()
		}
		return p, nil
	}
	rd, err := pcapgo.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("%s: not a pcap or pcapng file (%v)", name, err)
	}
	lt := rd.LinkType()
	if !supportedLinkType(lt) {
		return nil, fmt.Errorf("%s: link type %v not supported (want RAW, IPv4, IPv6, Ethernet or Linux SLL)", name, lt)
	}
	p.read = rd.ReadPacketData
	p.linkType = func(gopacket.CaptureInfo) layers.LinkType { return lt }
	return p, nil
}

func supportedLinkType(lt layers.LinkType) bool {
	switch lt {
	case layers.LinkTypeRaw, layers.LinkTypeIPv4, layers.LinkTypeIPv6, linkTypeRawAlt,
		layers.LinkTypeEthernet, layers.LinkTypeLinuxSLL:
		return true
	}
	return false
}

// linkTypeRawAlt is DLT_RAW's number on some BSDs, found in old files.
const linkTypeRawAlt layers.LinkType = 14

// ipOffset returns where the IP header starts in a frame of link type lt,
// and false when the frame carries no IPv4/IPv6 packet.
func ipOffset(lt layers.LinkType, frame []byte) (int, bool) {
	var off int
	var etherType uint16
	switch lt {
	case layers.LinkTypeRaw, layers.LinkTypeIPv4, layers.LinkTypeIPv6, linkTypeRawAlt:
		return 0, true
	case layers.LinkTypeEthernet:
		off = 14
		if len(frame) < off {
			return 0, false
		}
		etherType = binary.BigEndian.Uint16(frame[12:14])
	case layers.LinkTypeLinuxSLL:
		off = 16
		if len(frame) < off {
			return 0, false
		}
		etherType = binary.BigEndian.Uint16(frame[14:16])
	default:
		return 0, false
	}
	// 802.1Q / 802.1ad tags: 4 bytes each, the real EtherType after them.
	for (etherType == 0x8100 || etherType == 0x88a8) && len(frame) >= off+4 {
		etherType = binary.BigEndian.Uint16(frame[off+2 : off+4])
		off += 4
	}
	if etherType != 0x0800 && etherType != 0x86dd {
		return 0, false
	}
	return off, true
}

func (p *pcapTrace) next(tp *tracePacket) (bool, error) {
	for {
		data, ci, err := p.read()
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return false, fmt.Errorf("%s: packet %d: file ends inside the packet (truncated capture file?)", p.name, p.n+1)
			}
			return false, fmt.Errorf("%s: packet %d: %v", p.name, p.n+1, err)
		}
		p.n++
		lt := p.linkType(ci)
		if !supportedLinkType(lt) {
			return false, fmt.Errorf("%s: packet %d: link type %v not supported (want RAW, IPv4, IPv6, Ethernet or Linux SLL)", p.name, p.n, lt)
		}
		off, ok := ipOffset(lt, data)
		if !ok || off >= len(data) {
			p.skipped++
			continue
		}
		ip := data[off:]
		origLen := ci.Length - off
		if origLen > len(ip) {
			// Truncated capture (snaplen): pad to the original length so
			// the header's lengths hold and the packet occupies the link
			// as long as the real one did.
			ip = append(ip, make([]byte, origLen-len(ip))...)
		}
		if !p.started {
			p.start, p.started = ci.Timestamp, true
		}
		t := int64(ci.Timestamp.Sub(p.start))
		if t < p.last {
			t = p.last
			p.clamped++
		}
		p.last = t
		v := aqm.View(ip)
		size := v.Len()
		if size == 0 { // not a well-formed IP header: Classic Not-ECT, as is
			size = len(ip)
		}
		if size > 65535 {
			size = 65535
		}
		*tp = tracePacket{
			t: t, len: int32(size), ecn: v.ECN(), flow: v.FlowHash(),
			frame: ip, capLen: min(len(data)-off, len(ip)), origLen: len(ip),
		}
		return true, nil
	}
}
