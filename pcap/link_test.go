package pcap

import (
	"encoding/binary"
	"testing"

	"github.com/gopacket/gopacket/layers"
	"github.com/pi2hop/pi2hop/pcap/pcaptest"
)

func TestStripLink(t *testing.T) {
	ip := pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 17, Payload: 20}.Build()
	ip6 := pcaptest.Packet{Src: pcaptest.Cli6, Dst: pcaptest.Srv6, Proto: 17, Payload: 20}.Build()
	eth := func(etherType uint16, vlan bool, payload []byte) []byte {
		b := make([]byte, 12, 64)
		if vlan {
			b = binary.BigEndian.AppendUint16(b, 0x8100)
			b = binary.BigEndian.AppendUint16(b, 42)
		}
		b = binary.BigEndian.AppendUint16(b, etherType)
		return append(b, payload...)
	}
	sll := append(append(make([]byte, 14), 0x86, 0xdd), ip6...)
	sll2 := append(append([]byte{0x08, 0x00}, make([]byte, 18)...), ip...)
	null := append([]byte{2, 0, 0, 0}, ip...)
	for _, tc := range []struct {
		name string
		lt   layers.LinkType
		b    []byte
		hdr  int
		ok   bool
	}{
		{"raw", layers.LinkTypeRaw, ip, 0, true},
		{"raw, OpenBSD's DLT_RAW 14", 14, ip, 0, true},
		{"ipv4", layers.LinkTypeIPv4, ip, 0, true},
		{"ipv6", layers.LinkTypeIPv6, ip6, 0, true},
		{"ethernet", layers.LinkTypeEthernet, eth(0x0800, false, ip), 14, true},
		{"ethernet vlan", layers.LinkTypeEthernet, eth(0x86dd, true, ip6), 18, true},
		{"ethernet arp", layers.LinkTypeEthernet, eth(0x0806, false, make([]byte, 28)), 0, false},
		{"sll", layers.LinkTypeLinuxSLL, sll, 16, true},
		{"sll2", layers.LinkTypeLinuxSLL2, sll2, 20, true},
		{"bsd loopback", layers.LinkTypeNull, null, 4, true},
		{"raw not ip", layers.LinkTypeRaw, []byte{0x00, 1, 2}, 0, false},
		{"ppp", layers.LinkTypePPP, ip, 0, false},
		{"ethernet short", layers.LinkTypeEthernet, make([]byte, 10), 0, false},
	} {
		got, hdr, ok := stripLink(tc.lt, tc.b)
		if ok != tc.ok || (ok && (hdr != tc.hdr || len(got) != len(tc.b)-tc.hdr)) {
			t.Errorf("%s: hdr %d ok %v, want %d %v", tc.name, hdr, ok, tc.hdr, tc.ok)
		}
	}
}
