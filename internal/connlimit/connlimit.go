// Package connlimit keeps a server's accept loop alive and its
// connections bounded. Listen wraps a listener so that Accept outlives a
// process out of file descriptors (EMFILE, ENFILE) or a peer that gave up
// before the accept (ECONNABORTED): it waits and tries again, returning
// only once the listener is closed. A connection beyond the cap is closed
// as soon as it is accepted and counted, so a crowd of idle connections
// costs the process a fixed amount whatever its size, and the fds it
// frees let the next legitimate client in.
package connlimit

import (
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Counters are one server's connection figures, updated by its Listener.
type Counters struct {
	open, accepted, refused, acceptErrors atomic.Int64
}

// Stats is a copy of Counters, as stats --json prints it (docs/json.md).
type Stats struct {
	Open         int64 `json:"open"`          // connections open now
	Accepted     int64 `json:"accepted"`      // connections taken since start
	Refused      int64 `json:"refused"`       // closed at once: the cap was reached
	AcceptErrors int64 `json:"accept_errors"` // failed accepts retried (out of fds, aborted)
}

// Stats returns the counters' values now.
func (c *Counters) Stats() Stats {
	return Stats{Open: c.open.Load(), Accepted: c.accepted.Load(), Refused: c.refused.Load(), AcceptErrors: c.acceptErrors.Load()}
}

// Backoff bounds the wait between failed accepts: it starts at the first
// and doubles up to the second, so a process out of fds neither spins nor
// stays deaf for more than a quarter of a second once fds come back.
var Backoff = [2]time.Duration{5 * time.Millisecond, 250 * time.Millisecond}

// Listener is a net.Listener whose Accept retries and caps (see Listen).
type Listener struct {
	net.Listener
	max  int64
	c    *Counters
	log  *Limited
	what string

	once   sync.Once
	closed chan struct{}
}

// Listen wraps ln: at most max connections open at once (the rest are
// closed as accepted and counted as refused), Accept errors other than a
// closed listener retried after a backoff and logged through lg (at most
// one line per lg's interval). what names the server in the log.
func Listen(ln net.Listener, what string, max int, c *Counters, lg *Limited) *Listener {
	if c == nil {
		c = new(Counters)
	}
	return &Listener{Listener: ln, max: int64(max), c: c, log: lg, what: what, closed: make(chan struct{})}
}

// Counters returns the listener's counters.
func (l *Listener) Counters() *Counters { return l.c }

// Accept returns the next connection under the cap. It returns an error
// only when the listener is closed.
func (l *Listener) Accept() (net.Conn, error) {
	var wait time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil, err
			}
			select {
			case <-l.closed:
				return nil, net.ErrClosed
			default:
			}
			// Anything else is the process's state (fds, memory) or the
			// peer's: neither is a reason for the server to stop.
			l.c.acceptErrors.Add(1)
			wait = min(max(2*wait, Backoff[0]), Backoff[1])
			l.log.Warn(l.what+": accept failed; retrying", "err", err.Error(), "retry_in", wait.String())
			t := time.NewTimer(wait)
			select {
			case <-l.closed:
				t.Stop()
				return nil, net.ErrClosed
			case <-t.C:
			}
			continue
		}
		wait = 0
		if l.c.open.Add(1) > l.max {
			l.c.open.Add(-1)
			l.c.refused.Add(1)
			c.Close()
			l.log.Warn(fmt.Sprintf("%s: %d connections open: closing new ones", l.what, l.max))
			continue
		}
		l.c.accepted.Add(1)
		return &Conn{Conn: c, c: l.c}, nil
	}
}

// Close closes the listener and ends a backoff in progress.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// Conn is an accepted connection; closing it frees its place under the cap.
type Conn struct {
	net.Conn
	c    *Counters
	done atomic.Bool
}

// Close closes the connection once.
func (c *Conn) Close() error {
	if c.done.CompareAndSwap(false, true) {
		c.c.open.Add(-1)
	}
	return c.Conn.Close()
}

// NetConn returns the connection Accept took (as tls.Conn's does).
func (c *Conn) NetConn() net.Conn { return c.Conn }

// CloseWrite shuts the sending side where the connection has one (TCP,
// Unix): net/http half-closes before it closes a connection with an
// unread request body.
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.New("connlimit: the connection cannot half-close")
}

// Limited is a logger that writes at most one line per interval and says
// how many it held back, so a flood of failed accepts or broken clients
// leaves a trace without filling the log. A nil *Limited discards.
type Limited struct {
	log   *slog.Logger
	every time.Duration

	mu       sync.Mutex
	last     time.Time
	withheld int
}

// LogEvery is the most often a server logs a failed accept, a refused
// connection or an HTTP error: a flood of them leaves one line per
// interval with the count it held back.
const LogEvery = 10 * time.Second

// NewLimited logs to lg at most once per every.
func NewLimited(lg *slog.Logger, every time.Duration) *Limited {
	return &Limited{log: lg, every: every}
}

// Warn logs msg unless a line went out less than the interval ago.
func (l *Limited) Warn(msg string, args ...any) {
	if l == nil || l.log == nil {
		return
	}
	l.mu.Lock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		l.withheld++
		l.mu.Unlock()
		return
	}
	n := l.withheld
	l.last, l.withheld = now, 0
	l.mu.Unlock()
	if n > 0 {
		args = append(args, "withheld", n)
	}
	l.log.Warn(msg, args...)
}

// ErrorLog is a log.Logger for http.Server.ErrorLog that writes each line
// through l, prefixed by what: the server's complaints (TLS handshakes,
// broken clients, failed accepts) go to pi2hop's log, not to the standard
// error the user's command shares.
func ErrorLog(l *Limited, what string) *log.Logger {
	return log.New(writer{l, what}, "", 0)
}

type writer struct {
	l    *Limited
	what string
}

func (w writer) Write(p []byte) (int, error) {
	msg := string(p)
	if n := len(msg); n > 0 && msg[n-1] == '\n' {
		msg = msg[:n-1]
	}
	w.l.Warn(w.what + ": " + msg)
	return len(p), nil
}
