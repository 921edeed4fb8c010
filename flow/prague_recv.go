package flow

import (
	"context"
	"net"
	"net/netip"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/flow/ecnudp"
	"github.com/pi2hop/pi2hop/flow/wire"
)

// setFeedbackECN makes a receiver's feedback (ACKs, blocks) ECT(1) in L4S
// mode, as udp_prague's receiver sends it, and Not-ECT in classic mode;
// in L4S mode the acker then follows the data (acker.follow).
func setFeedbackECN(conn *net.UDPConn, classic bool) error {
	if classic {
		return ecnudp.SetECN(conn, aqm.NotECT)
	}
	return ecnudp.SetECN(conn, aqm.ECT1)
}

// PragueRecv receives a Prague flow on conn and ACKs every packet with the
// cumulative received / CE / lost counters (type 17), or with cfg.RFC8888
// reports the packets in type-18 blocks every cfg.RFC8888Period, until
// ctx is done or cfg.Duration has passed. ACKs and blocks are ECT(1) in
// L4S mode (as udp_prague's) and Not-ECT in classic mode. A packet arriving neither ECT(1) nor CE
// latches error_L4S, which makes an L4S sender fall back to Not-ECT.
// A packet from a new source address starts a new flow.
func PragueRecv(ctx context.Context, conn *net.UDPConn, cfg PragueConfig, report func(Interval)) (ReceiverSummary, error) {
	cfg, classic, err := cfg.withDefaults()
	if err != nil {
		return ReceiverSummary{}, err
	}
	if err := setFeedbackECN(conn, classic); err != nil {
		return ReceiverSummary{}, err
	}
	r := &pragueReceiver{conn: conn, clock: wire.NewClock(), label: cfg.Label, report: report,
		iv: newRecvInterval(cfg.Interval)}
	r.acks = newAcker(conn, "prague-recv", cfg.RFC8888, cfg.RFC8888Period, cfg.MTU, classic)
	err = recvLoop(ctx, conn, r.clock, cfg.Duration, r.packet, r.tick, r.acks.fb.wake)
	return r.summary(), err
}

type pragueReceiver struct {
	conn   *net.UDPConn
	clock  wire.Clock
	label  string
	report func(Interval)

	st          ackState
	acks        acker
	first, last int64 // µs: first and last data packet

	iv        recvInterval
	intervals []Interval
}

func (r *pragueReceiver) packet(now, at int64, p []byte, from netip.AddrPort, e aqm.ECN) error {
	d, err := wire.DecodeData(p)
	if err != nil {
		return nil // not ours
	}
	if r.st.started && from != r.st.peer {
		r.st = ackState{} // a new sender: a new flow
		r.iv.forget()
		r.acks.fb.restart()
	}
	if !r.st.started {
		r.first = now
		r.st.peer = from
	}
	r.last = now
	ack := r.st.data(now, at, d, e, len(p))
	if err := r.acks.send(now, at, from, d.Seq, e, ack); err != nil {
		return err
	}
	r.iv.add(len(p))
	return nil
}

func (r *pragueReceiver) tick(now int64, final bool) error {
	if err := r.acks.fb.tick(now, final); err != nil {
		return err
	}
	if !r.iv.due(now, final) {
		return nil
	}
	iv := r.iv.close("prague-recv", r.label, now, &r.st)
	r.intervals = append(r.intervals, iv)
	if r.report != nil {
		r.report(iv)
	}
	return nil
}

func (r *pragueReceiver) summary() ReceiverSummary {
	d := time.Duration(r.last-r.first) * time.Microsecond
	s := ReceiverSummary{
		Label: r.label, Duration: d,
		Packets: int64(r.st.received), Bytes: r.st.bytes,
		NotECT: r.st.byECN[aqm.NotECT], ECT1: r.st.byECN[aqm.ECT1], ECT0: r.st.byECN[aqm.ECT0], CE: r.st.byECN[aqm.CE],
		Lost: int64(r.st.lost), ErrorL4S: r.st.errorL4S,
		GoodputBps: bps(r.st.bytes, d),
		Intervals:  r.intervals,
	}
	s.CEFraction = frac(s.CE, s.ECT1+s.CE)
	s.LossFraction = frac(s.Lost, s.Packets+s.Lost)
	return s
}
