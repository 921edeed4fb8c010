package topology

import (
	"context"
	"errors"
	"sync"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/tun"
)

// started is a hop running in a goroutine of its own over devices a
// topology (Pair, Gateway) built through a journal: what the topologies
// share of waiting and stopping.
type started struct {
	h         *hop.Hop
	journal   *netsys.Journal
	done      chan struct{}
	runErr    error
	closeOnce sync.Once
	closeErr  error
}

// startHop builds the hop between a topology's two devices (client side
// first), installs tap and starts it in its own goroutine.
func (s *started) startHop(ctx context.Context, cfg hop.Config, devs []tun.Device, tap hop.Tap, j *netsys.Journal) (*hop.Hop, error) {
	h, err := hop.New(cfg, devs[0], devs[1])
	if err != nil {
		return nil, err
	}
	if tap != nil {
		h.SetTap(tap)
	}
	s.h, s.journal, s.done = h, j, make(chan struct{})
	go func() {
		defer close(s.done)
		s.runErr = h.Run(ctx)
	}()
	return h, nil
}

// abandon closes devs and undoes j: what a topology does when building
// it fails half way.
func abandon(devs []tun.Device, j *netsys.Journal) {
	for _, d := range devs {
		d.Close()
	}
	j.Undo()
}

// mtuOf is the MTU of the devices a hop of cfg forwards between.
func mtuOf(cfg hop.Config) int {
	if cfg.MTU == 0 {
		return hop.DefaultMTU
	}
	return cfg.MTU
}

// OpenTUN opens TUN device name with backend b inside namespace ns ("" =
// the host's), recorded in j first: closing the device removes it, and
// the record covers a crash in between.
func OpenTUN(j *netsys.Journal, ns, name string, mtu int, b tun.Backend) (tun.Device, error) {
	var d tun.Device
	err := j.AddLink(ns, name, func() (err error) { d, err = tun.OpenBackend(name, mtu, b); return err })
	return d, err
}

// Done is closed when the hop has stopped; Err then says why.
func (s *started) Done() <-chan struct{} { return s.done }

// Err returns the hop's error once Done is closed (nil for a normal stop).
func (s *started) Err() error {
	select {
	case <-s.done:
		return s.runErr
	default:
		return nil
	}
}

// Close delivers what the hop still holds (hop.Hop.Drain, bounded
// by hop.Hop.DrainBound), stops the hop, closes its devices and undoes every
// change in the journal (including what the caller recorded there). It is
// idempotent.
func (s *started) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if s.h != nil {
			ctx, cancel := context.WithTimeout(context.Background(), s.h.DrainBound())
			if err := s.h.Drain(ctx); err != nil {
				s.h.Config().Logger.Debug("topology: closing with packets in flight", "err", err)
			}
			cancel()
			errs = append(errs, s.h.Close())
			<-s.done
		}
		errs = append(errs, s.journal.Undo())
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
