package wire_test

import (
	"net/netip"
	"testing"

	"github.com/pi2hop/pi2hop/flow/wire"
	"github.com/pi2hop/pi2hop/pcap/pcaptest"
	"github.com/pi2hop/pi2hop/rtt"
)

// TestPassiveRTT: package rtt times udp_prague messages as this package
// writes them (rtt sits below wire and repeats the offsets it reads).
func TestPassiveRTT(t *testing.T) {
	tb, err := rtt.NewTable(rtt.DefaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	hdr := func(src, dst byte, sport, dport uint16, payload []byte) []byte {
		return pcaptest.Packet{Src: netip.AddrFrom4([4]byte{10, 0, 0, src}), Dst: netip.AddrFrom4([4]byte{10, 0, 0, dst}),
			Proto: 17, SPort: sport, DPort: dport, Data: payload}.Build()
	}
	data := wire.AppendData(nil, wire.Data{RT: true, TS: 5, EchoedTS: 6, Seq: 42, FrameNr: 1})
	data = append(data, make([]byte, 1000)...)
	ack := wire.AppendACK(nil, wire.ACK{AckSeq: 42, TS: 7, EchoedTS: 5, Received: 1, Counts: true})
	tb.Packet(hdr(1, 2, 5000, 6000, data), rtt.Up, 1_000_000)
	tb.Packet(hdr(2, 1, 6000, 5000, ack), rtt.Down, 4_000_000)
	s := rtt.NewSnapshot(tb)
	tb.CopyTo(s, 0)
	fs := s.Flows()
	if len(fs) != 1 || fs[0].Method != rtt.MethodPrague || fs[0].ServerHalf.N != 1 || fs[0].ServerHalf.MaxMs != 3 {
		t.Fatalf("flows %+v, want one prague flow with a 3 ms server half", fs)
	}
}
