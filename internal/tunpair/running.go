package tunpair

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/pi2hop/pi2hop/netsys"
)

// Forwarder is what runs between a topology's devices (a hop.Hop).
type Forwarder interface {
	Run(ctx context.Context) error
	// Drain delivers what the forwarder holds, until ctx is done.
	Drain(ctx context.Context) error
	// DrainBound is the longest Drain should be given.
	DrainBound() time.Duration
	Close() error
}

// Running is a forwarder running in a goroutine of its own over devices a
// topology (Pair, Gateway) built through a journal: what the topologies
// share of waiting and stopping.
type Running struct {
	f         Forwarder
	log       *slog.Logger
	journal   *netsys.Journal
	done      chan struct{}
	runErr    error
	closeOnce sync.Once
	closeErr  error
}

// Start runs f until ctx is done or Close. Close undoes j; log (nil =
// discard) hears of packets Close could not deliver.
func Start(ctx context.Context, f Forwarder, j *netsys.Journal, log *slog.Logger) *Running {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Running{f: f, log: log, journal: j, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.runErr = f.Run(ctx)
	}()
	return r
}

// Done is closed when the forwarder has stopped; Err then says why.
func (r *Running) Done() <-chan struct{} { return r.done }

// Err returns the forwarder's error once Done is closed (nil for a normal
// stop).
func (r *Running) Err() error {
	select {
	case <-r.done:
		return r.runErr
	default:
		return nil
	}
}

// Close delivers what the forwarder still holds (Drain, bounded by
// DrainBound), stops it, which closes its devices, and undoes every change
// in the journal (including what the caller recorded there). It is
// idempotent.
func (r *Running) Close() error {
	r.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), r.f.DrainBound())
		if err := r.f.Drain(ctx); err != nil {
			r.log.Debug("topology: closing with packets in flight", "err", err)
		}
		cancel()
		errs := []error{r.f.Close()}
		<-r.done
		errs = append(errs, r.journal.Undo())
		r.closeErr = errors.Join(errs...)
	})
	return r.closeErr
}
