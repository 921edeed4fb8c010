package testbed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/pi2hop/pi2hop/flow"
	"github.com/pi2hop/pi2hop/topology"
)

// endpoints are a run's open sockets, one set per flow.
type endpoints struct {
	sp      RunSpec
	flows   []endpoint
	bulkLn  net.Listener // server side of every TCP flow
	closers []func() error
}

type endpoint struct {
	spec       FlowSpec
	send, recv *net.UDPConn // UDP flows: sender on the server, receiver on the client
	peer       netip.AddrPort
	tcp        net.Conn // TCP flows: the client's connection
}

func (e *endpoints) close() {
	for _, c := range e.closers {
		c()
	}
	e.closers = nil
}

// First port of the lab's flows; each flow takes the next.
const basePort = 5100

func openEndpoints(pair *topology.Pair, sp RunSpec) (*endpoints, error) {
	e := &endpoints{sp: sp}
	server := pair.ServerAddr
	for i, fs := range sp.Flows {
		ep := endpoint{spec: fs}
		port := uint16(basePort + i)
		switch fs.Kind {
		case KindVideo, KindPrague:
			ep.peer = netip.AddrPortFrom(pair.ClientAddr, port)
			err := pair.InClient(func() (err error) {
				ep.recv, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(ep.peer))
				return err
			})
			if err != nil {
				return e, fmt.Errorf("%s: receiver socket: %w", fs.Label, err)
			}
			e.closers = append(e.closers, ep.recv.Close)
			err = pair.InServer(func() (err error) {
				ep.send, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(server, 0)))
				return err
			})
			if err != nil {
				return e, fmt.Errorf("%s: sender socket: %w", fs.Label, err)
			}
			e.closers = append(e.closers, ep.send.Close)
		case KindCubic:
			if e.bulkLn == nil {
				lc := net.ListenConfig{Control: tcpSenderControl(fs.Window)}
				err := pair.InServer(func() (err error) {
					e.bulkLn, err = lc.Listen(context.Background(), "tcp", netip.AddrPortFrom(server, basePort-1).String())
					return err
				})
				if err != nil {
					return e, fmt.Errorf("%s: listener: %w", fs.Label, err)
				}
				e.closers = append(e.closers, e.bulkLn.Close)
			}
			d := net.Dialer{Control: tcpReceiverControl(fs.Window), Timeout: 5 * time.Second}
			err := pair.InClient(func() (err error) {
				ep.tcp, err = d.Dial("tcp", e.bulkLn.Addr().String())
				return err
			})
			if err == nil && fs.Window > 0 {
				ep.tcp = newClampConn(ep.tcp.(*net.TCPConn), fs.Window)
			}
			if err != nil {
				return e, fmt.Errorf("%s: connect: %w", fs.Label, err)
			}
			e.closers = append(e.closers, ep.tcp.Close)
		default:
			return e, fmt.Errorf("%s: unknown flow kind %q", fs.Label, fs.Kind)
		}
		e.flows = append(e.flows, ep)
	}
	return e, nil
}

// drainTime is how long receivers keep listening after the senders stop,
// so packets still in the queue and delay line are counted as received.
const drainTime = 300 * time.Millisecond

// run starts every flow together, samples the hop's stats while they run
// and fills res. Receivers stop drainTime after the last sender.
func (e *endpoints) run(ctx context.Context, pair *topology.Pair, res *runResult) error {
	sp := e.sp
	recvCtx, stopRecv := context.WithCancel(ctx)
	defer stopRecv()
	sendCtx, stopSend := context.WithTimeout(ctx, sp.Duration+5*time.Second) // a safety net: senders stop by themselves
	defer stopSend()

	res.flows = make([]flowResult, len(e.flows))
	var senders, receivers sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	fail := func(label string, err error) {
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, net.ErrClosed) {
			mu.Lock()
			errs = append(errs, fmt.Errorf("%s: %w", label, err))
			mu.Unlock()
		}
	}
	if e.bulkLn != nil {
		receivers.Add(1)
		go func() {
			defer receivers.Done()
			fail("bulk server", flow.BulkServe(recvCtx, e.bulkLn))
		}()
	}
	from, to := window(sp)
	sampler := startSampler(pair, from, to)
	for i, ep := range e.flows {
		fr := &res.flows[i]
		fr.spec = ep.spec
		label := ep.spec.Label
		switch ep.spec.Kind {
		case KindVideo:
			vc := flow.VideoConfig{ECN: ep.spec.ECN, Seed: sp.Seed + uint64(i), Duration: sp.Duration, Interval: time.Second, Label: label,
				NoECNValidation: ep.spec.NoECNValidation}
			rc := vc
			rc.Duration = 0 // until stopped: count everything the sender sent
			goKeep(&receivers, &fr.videoRecv, fail, label+" receiver", func() (flow.VideoReceiverSummary, error) {
				return flow.VideoRecv(recvCtx, ep.recv, rc, nil)
			})
			goKeep(&senders, &fr.videoSend, fail, label+" sender", func() (flow.VideoSenderSummary, error) {
				return flow.VideoSend(sendCtx, ep.send, ep.peer, vc, nil)
			})
		case KindPrague:
			pc := flow.PragueConfig{ECN: ep.spec.ECN, Duration: sp.Duration, Interval: time.Second, Label: label,
				NoECNValidation: ep.spec.NoECNValidation}
			rc := pc
			rc.Duration = 0
			goKeep(&receivers, &fr.pragueRecv, fail, label+" receiver", func() (flow.ReceiverSummary, error) {
				return flow.PragueRecv(recvCtx, ep.recv, rc, nil)
			})
			goKeep(&senders, &fr.pragueSend, fail, label+" sender", func() (flow.SenderSummary, error) {
				return flow.PragueSend(sendCtx, ep.send, ep.peer, pc, nil)
			})
		case KindCubic:
			goKeep(&senders, &fr.bulk, fail, label, func() (flow.BulkSummary, error) {
				return flow.BulkFetch(sendCtx, ep.tcp, sp.Duration, nil)
			})
		}
	}
	senders.Wait()
	select {
	case <-time.After(drainTime):
	case <-ctx.Done():
	}
	res.queues = sampler.stop()
	stopRecv()
	e.close() // unblocks a receiver or server stuck in a read
	receivers.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.Join(errs...)
}

// goKeep runs f in a goroutine counted by wg, keeps its result in *dst and
// hands its error, as what's, to fail.
func goKeep[S any](wg *sync.WaitGroup, dst **S, fail func(what string, err error), what string, f func() (S, error)) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		s, err := f()
		*dst = &s
		fail(what, err)
	}()
}
