package rtt

import "testing"

// FuzzPacket: any bytes, either way, at any time, never crash the table
// nor break its bounds; each is counted.
func FuzzPacket(f *testing.F) {
	for _, p := range []pkt{
		tcpTS(synack, 1, 2, 10, 3, 4), tcpSeq(ackf, 1, 2, 3), v6(tcpTS(ackf, 1, 2, 0, 3, 4)),
		quic(true, false), quic(false, true), icmp(false, icmpEchoReply, 1, 2), icmp(true, icmpv6EchoRequest, 1, 2),
	} {
		b := p.build(Up)
		f.Add(b, false, int64(5), len(b))
		f.Add(b[:len(b)-3], true, int64(-1), len(b)+1000)
	}
	tb, err := NewTable(Config{Flows: 16, Outstanding: 4})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte, down bool, now int64, length int) {
		d := Up
		if down {
			d = Down
		}
		before := tb.Stats().Packets
		tb.Packet(b, d, now)
		tb.Packet(b, 1-d, now+1)
		tb.Captured(b, length, d, now+2)
		if tb.Stats().Packets != before+3 {
			t.Fatalf("packets counted %d, want %d", tb.Stats().Packets, before+2)
		}
		for i := range tb.flows {
			for _, s := range tb.flows[i].snd {
				if s.n > tb.out || s.head >= tb.out {
					t.Fatalf("flow %d ring head %d n %d, size %d", i, s.head, s.n, tb.out)
				}
			}
		}
		_ = snap(tb).Flows()
	})
}
