package pcaptest

import (
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/pi2hop/pi2hop/aqm"
)

// gopacket, an independent decoder, reads what Build wrote: addresses,
// DS field, ports, TCP flags, numbers and the timestamp option, lengths
// and a valid IPv4 checksum.
func TestBuildDecodes(t *testing.T) {
	for _, p := range []Packet{
		{Src: Cli4, Dst: Srv4, Proto: 6, SPort: 40000, DPort: 443, ECN: aqm.ECT1, DSCP: 10, ID: 7, Payload: 100,
			Seq: 1000, Ack: 2000, Flags: TCPAck | TCPPsh, TS: true, TSval: 0x01020304, TSecr: 0xa0b0c0d0},
		{Src: Cli6, Dst: Srv6, Proto: 6, SPort: 40000, DPort: 443, ECN: aqm.ECT0, DSCP: 46, ID: 0xabcde, Payload: 10,
			Seq: 5, Flags: TCPSyn, TS: true, TSval: 9},
		{Src: Cli4, Dst: Srv4, Proto: 17, SPort: 5000, DPort: 6000, ECN: aqm.CE, Payload: 50},
		{Src: Cli6, Dst: Srv6, Proto: 17, SPort: 5000, DPort: 6000, Data: []byte("a datagram"), Seq: 1},
		{Src: Cli4, Dst: Srv4, Proto: 6, SPort: 1, DPort: 2, Flags: TCPFin | TCPAck, IPv4HeaderLength: 24},
	} {
		b := p.Build()
		first := layers.LayerTypeIPv4
		if p.Src.Is6() {
			first = layers.LayerTypeIPv6
		}
		pkt := gopacket.NewPacket(b, first, gopacket.Default)
		if el := pkt.ErrorLayer(); el != nil {
			t.Fatalf("%+v: %v", p, el.Error())
		}
		var src, dst netip.Addr
		var tos uint8
		switch ip := pkt.NetworkLayer().(type) {
		case *layers.IPv4:
			src, dst, tos = netip.AddrFrom4([4]byte(ip.SrcIP.To4())), netip.AddrFrom4([4]byte(ip.DstIP.To4())), ip.TOS
			if int(ip.Length) != len(b) || ip.Id != uint16(p.ID) || ip.TTL != 64 || IPv4Checksum(b[:ip.IHL*4]) != ip.Checksum {
				t.Errorf("%+v: IPv4 header %+v", p, ip)
			}
		case *layers.IPv6:
			src, dst, tos = netip.AddrFrom16([16]byte(ip.SrcIP)), netip.AddrFrom16([16]byte(ip.DstIP)), ip.TrafficClass
			if int(ip.Length) != len(b)-40 || ip.FlowLabel != p.ID || ip.HopLimit != 64 {
				t.Errorf("%+v: IPv6 header %+v", p, ip)
			}
		}
		if src != p.Src || dst != p.Dst || tos != p.DSCP<<2|byte(p.ECN) {
			t.Errorf("%+v: %v -> %v, DS field %#x", p, src, dst, tos)
		}
		if p.Proto == 17 {
			u := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
			want := make([]byte, p.Payload)
			if p.Data != nil {
				want = p.Data
			}
			if u.SrcPort != 5000 || u.DstPort != 6000 || int(u.Length) != 8+len(want) || string(u.Payload) != string(want) {
				t.Errorf("%+v: UDP %+v", p, u)
			}
			continue
		}
		tcp := pkt.Layer(layers.LayerTypeTCP).(*layers.TCP)
		flags := [5]bool{tcp.FIN, tcp.SYN, tcp.RST, tcp.PSH, tcp.ACK}
		for i, f := range flags {
			if f != (p.Flags&(1<<i) != 0) {
				t.Errorf("%+v: TCP flag %d is %v", p, i, f)
			}
		}
		if uint16(tcp.SrcPort) != p.SPort || uint16(tcp.DstPort) != p.DPort || tcp.Seq != p.Seq || tcp.Ack != p.Ack || len(tcp.Payload) != p.Payload {
			t.Errorf("%+v: TCP %+v", p, tcp)
		}
		var ts []byte
		for _, o := range tcp.Options {
			if o.OptionType == layers.TCPOptionKindTimestamps {
				ts = o.OptionData
			}
		}
		want := []byte(nil)
		if p.TS {
			want = []byte{byte(p.TSval >> 24), byte(p.TSval >> 16), byte(p.TSval >> 8), byte(p.TSval), byte(p.TSecr >> 24), byte(p.TSecr >> 16), byte(p.TSecr >> 8), byte(p.TSecr)}
		}
		if string(ts) != string(want) {
			t.Errorf("%+v: timestamp option % x, want % x", p, ts, want)
		}
	}
}

// SetECN changes only the ECN bits, keeps the IPv4 checksum right and
// leaves the packet it was given alone.
func TestSetECN(t *testing.T) {
	for _, p := range []Packet{
		{Src: Cli4, Dst: Srv4, Proto: 17, DSCP: 10, ECN: aqm.ECT1, Payload: 8},
		{Src: Cli6, Dst: Srv6, Proto: 17, DSCP: 10, ECN: aqm.ECT1, Payload: 8},
	} {
		b := p.Build()
		for _, e := range []aqm.ECN{aqm.NotECT, aqm.ECT0, aqm.CE} {
			out := SetECN(b, e)
			m := aqm.MetaOf(out, 0)
			if m.ECN != e || m.DSCP != 10 || aqm.MetaOf(b, 0).ECN != aqm.ECT1 {
				t.Errorf("%v: SetECN(%v) gave %+v", p.Src, e, m)
			}
			if p.Src.Is4() && aqm.Checksum(out[:20]) != 0 {
				t.Errorf("SetECN(%v): IPv4 checksum wrong", e)
			}
		}
	}
}
