package flow

import (
	"slices"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/flow/prague"
	"github.com/pi2hop/pi2hop/flow/wire"
)

// TestRTTNeverBelowPath runs the sender's timestamps and RTT samples and
// the receivers' ACK generation (ackState, which PragueRecv and VideoRecv
// share) over a virtual path of 10 ms each way that stalls and then
// delivers in a burst, reorders data and ACKs, and ends that stop reading
// for a while after their kernel received a datagram: every RTT sample
// must be exactly the path's, from sending the ACKed packet to the kernel
// receiving it plus from sending its ACK to the kernel receiving that,
// so never below 20 ms and never counting the ends' own holds. The two
// ends' clocks start far apart and wrap the 32-bit µs timestamps during
// the run.
func TestRTTNeverBelowPath(t *testing.T) {
	const (
		oneWay   = 10_000 // µs
		interval = 700    // µs between data packets
		packets  = 3000
	)
	type window struct{ from, to int64 } // µs of path time
	tests := []struct {
		name                string
		dataStall, ackStall window // packets entering meanwhile leave together at to
		recvStall           window // the receiver reads nothing meanwhile
		sendStall           window // the sender reads no ACK meanwhile
		reorderData         int    // every n-th data packet takes 3 ms longer
		reorderACK          int    // every n-th ACK takes 2 ms longer
	}{
		{name: "clean"},
		{name: "data path stall, burst after", dataStall: window{500_000, 540_000}},
		{name: "ACK path stall, burst after", ackStall: window{800_000, 830_000}},
		{name: "receiver stops reading", recvStall: window{1_000_000, 1_035_000}},
		{name: "sender stops reading", sendStall: window{700_000, 703_000}},
		{name: "reordering both ways", reorderData: 7, reorderACK: 5},
		{name: "everything", dataStall: window{300_000, 345_000}, ackStall: window{310_000, 350_000},
			recvStall: window{1_200_000, 1_230_000}, sendStall: window{1_400_000, 1_402_000}, reorderData: 3, reorderACK: 4},
	}
	through := func(at int64, w window) int64 {
		if at >= w.from && at < w.to {
			return w.to
		}
		return at
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Path time T; the sender's clock reads T+senderZero, the
			// receiver's T+recvZero (both cross a 2^31 or 2^32 µs boundary).
			const senderZero, recvZero = 1<<31 - 400_000, 1<<32 - 900_000
			cc, err := prague.New(prague.Config{}, senderZero)
			if err != nil {
				t.Fatal(err)
			}
			s := &sender{cc: cc}
			type pkt struct {
				at   int64 // path time the kernel received it
				read int64 // path time its end read it
				d    wire.Data
				a    wire.ACK
				sent int64
			}
			sentAt := make(map[int32]int64)
			var data []pkt
			for i := 0; i < packets; i++ {
				at := int64(i) * interval
				d := s.dataHeader(at + senderZero)
				s.record(at+senderZero, 1400)
				sentAt[d.Seq] = at
				arrive := through(at+oneWay, tc.dataStall)
				if tc.reorderData > 0 && i%tc.reorderData == 0 {
					arrive += 3000
				}
				data = append(data, pkt{at: arrive, d: d, sent: at})
			}
			slices.SortStableFunc(data, func(x, y pkt) int { return int(x.at - y.at) })
			var r ackState
			var acks []pkt
			arrivedAt := make(map[int32]int64) // data: path time the receiver's kernel got it
			heldFor := make(map[int32]int64)   // data: read this much later
			for i, p := range data {
				read := through(p.at, tc.recvStall)
				a := r.data(read+recvZero, p.at+recvZero, p.d, aqm.ECT1, 1400)
				arrivedAt[p.d.Seq], heldFor[p.d.Seq] = p.at, read-p.at
				arrive := through(read+oneWay, tc.ackStall)
				if tc.reorderACK > 0 && i%tc.reorderACK == 0 {
					arrive += 2000
				}
				acks = append(acks, pkt{at: arrive, a: a})
			}
			slices.SortStableFunc(acks, func(x, y pkt) int { return int(x.at - y.at) })
			for i := range acks {
				acks[i].read = through(acks[i].at, tc.sendStall)
				s.onACK(acks[i].read+senderZero, acks[i].at+senderZero, acks[i].a)
			}
			if len(s.rtt) != len(acks) {
				t.Fatalf("%d RTT samples from %d ACKs", len(s.rtt), len(acks))
			}
			for i, p := range acks {
				seq := p.a.AckSeq
				want := (arrivedAt[seq] - sentAt[seq]) + (p.at - (arrivedAt[seq] + heldFor[seq]))
				if got := s.rtt[i].Microseconds(); got != want || got < 2*oneWay {
					t.Fatalf("ACK %d (seq %d) received at %d µs, read at %d: RTT sample %d µs, want %d (never below %d)",
						i, seq, p.at, p.read, got, want, 2*oneWay)
				}
			}
		})
	}
}

// TestControllerRTTIsAckAge: the controller's RTT sample for a type-17
// ACK is what udp_prague's srtt measures, the time from sending a packet
// to reading its ACK, both ends' wake-ups included (its receiver freezes
// the echo when its recvfrom returns and replies at once), and srtt is
// its EWMA, srtt += (rtt - srtt) >> 3 (prague_cc.cpp, PacketReceived),
// while the reported RTT stays the path's. Path 10 ms each way; the
// receiver reads each packet, the sender each ACK, some µs to ms after
// its kernel received it, in order. The first packet, sent at 0: the
// receiver's kernel has it at 10 000 and the receiver reads it at 10 400,
// its ACK reaches the sender's kernel at 20 400 and is read at 20 450, so
// udp_prague's sample is 20 450 µs; the echo, frozen at 10 000, gives
// 20 050, and the path 20 000.
func TestControllerRTTIsAckAge(t *testing.T) {
	const (
		oneWay   = 10_000 // µs
		interval = 1_000  // µs between data packets
		packets  = 400
	)
	recvHold := []int64{400, 0, 35, 120, 3_000, 60, 900, 10} // µs, cycled
	sendHold := []int64{50, 0, 700, 20, 15, 2_500}
	const senderZero, recvZero = 1<<31 - 200_000, 1<<32 - 150_123 // both clocks wrap during the run (no stamp lands on the 0 that Stamp skips)
	cc, err := prague.New(prague.Config{}, senderZero)
	if err != nil {
		t.Fatal(err)
	}
	s := &sender{cc: cc}
	var r ackState
	var recvRead, sendRead, srtt int64 // path time the ends last read; the reference's srtt
	for i := int64(0); i < packets; i++ {
		sent := i * interval
		d := s.dataHeader(sent + senderZero)
		s.record(sent+senderZero, 1400)
		arrived := sent + oneWay
		recvRead = max(arrived+recvHold[i%int64(len(recvHold))], recvRead)
		a := r.data(recvRead+recvZero, arrived+recvZero, d, aqm.ECT1, 1400)
		ackAt := recvRead + oneWay
		sendRead = max(ackAt+sendHold[i%int64(len(sendHold))], sendRead)
		s.onACK(sendRead+senderZero, ackAt+senderZero, a)

		age := sendRead - sent
		if i == 0 {
			if age != 20_450 {
				t.Fatalf("first ACK read %d µs after its packet was sent, want 20 450", age)
			}
			srtt = age
		} else {
			srtt += (age - srtt) >> 3
		}
		if got := cc.Info(sendRead + senderZero).SRTT; got != srtt {
			t.Fatalf("packet %d: srtt %d µs, want %d (ACK read %d µs after the packet was sent)", i, got, srtt, age)
		}
		if got := s.rtt[i].Microseconds(); got != 2*oneWay {
			t.Fatalf("packet %d: reported RTT %d µs, want the path's %d", i, got, 2*oneWay)
		}
	}
}

// TestEchoSubtractsHoldTime: a timestamp echoed after being held h µs is
// the peer's timestamp advanced by h, across the 32-bit wrap, so the
// peer's now − echoed excludes the hold; a newer arrival replaces it.
func TestEchoSubtractsHoldTime(t *testing.T) {
	tests := []struct {
		name          string
		recvAt, ts    int64 // our clock at receipt, the peer's clock at sending (µs)
		hold, peerRTT int64
	}{
		{"no hold", 5_000_000, 3_000_000, 0, 20_000},
		{"held 7 ms", 5_000_000, 3_000_000, 7_000, 20_000},
		{"our clock wraps while held", 1<<32 - 2_000, 100_000, 5_000, 21_000},
		{"peer clock wraps", 40_000, 1<<32 - 10_000, 3_000, 20_000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e wire.Echo
			if got := e.Echoed(tc.recvAt); got != 0 {
				t.Fatalf("Echoed before any timestamp = %d, want 0", got)
			}
			e.Received(tc.recvAt, wire.Stamp(tc.ts))
			echoed := e.Echoed(tc.recvAt + tc.hold)
			// The peer reads our message when the path has taken peerRTT
			// and we held its timestamp for hold.
			peerNow := tc.ts + tc.peerRTT + tc.hold
			if got := int64(wire.Since(peerNow, echoed)); got != tc.peerRTT {
				t.Errorf("peer's RTT sample %d µs, want %d", got, tc.peerRTT)
			}
		})
	}
}
