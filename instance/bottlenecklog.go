package instance

import (
	"log/slog"
	"sync"
	"time"

	"github.com/pi2hop/pi2hop/hop"
)

// bottleneckPoll is how often the log looks at whether the hop is the
// bottleneck: the verdict itself takes seconds to change.
const bottleneckPoll = time.Second

// bottleneckLog logs each direction's not-the-bottleneck warning when it
// starts to hold, and when it stops.
type bottleneckLog struct {
	log  *slog.Logger
	warn [2]bool
}

// see logs what changed in s since the last call.
func (b *bottleneckLog) see(s *hop.Snapshot) {
	for i, d := range []*hop.DirStats{&s.Up, &s.Down} {
		switch {
		case d.NotBottleneck && !b.warn[i]:
			b.log.Warn(d.Dir.String()+": "+hop.NotBottleneckLine(d.PathBps), "dir", d.Dir.String(), "path_bps", int64(d.PathBps))
		case !d.NotBottleneck && b.warn[i]:
			b.log.Info(d.Dir.String()+": the queue builds again: pi2hop is the bottleneck", "dir", d.Dir.String())
		}
		b.warn[i] = d.NotBottleneck
	}
}

// watchBottleneck logs the warnings of h until the closer it returns is
// closed.
func watchBottleneck(h *hop.Hop, log *slog.Logger) closerFunc {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		b := &bottleneckLog{log: log}
		t := time.NewTicker(bottleneckPoll)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				s := h.Stats()
				b.see(&s)
			}
		}
	}()
	var once sync.Once
	return func() error {
		once.Do(func() { close(stop); <-done })
		return nil
	}
}

// closerFunc is a function as an io.Closer.
type closerFunc func() error

func (f closerFunc) Close() error { return f() }
