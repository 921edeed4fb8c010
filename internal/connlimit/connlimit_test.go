package connlimit

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// script is a listener that returns the errors it was given, then
// connections of a pipe, then net.ErrClosed once closed.
type script struct {
	errs   []error
	closed chan struct{}
}

func (s *script) Accept() (net.Conn, error) {
	if len(s.errs) > 0 {
		err := s.errs[0]
		s.errs = s.errs[1:]
		return nil, err
	}
	select {
	case <-s.closed:
		return nil, net.ErrClosed
	default:
	}
	c, _ := net.Pipe()
	return c, nil
}
func (s *script) Close() error   { close(s.closed); return nil }
func (s *script) Addr() net.Addr { return &net.UnixAddr{Name: "script", Net: "unix"} }

func TestAcceptRetriesTemporaryErrors(t *testing.T) {
	var logged bytes.Buffer
	lg := NewLimited(slog.New(slog.NewTextHandler(&logged, nil)), time.Hour)
	errs := []error{
		&net.OpError{Op: "accept", Err: syscall.EMFILE},
		&net.OpError{Op: "accept", Err: syscall.ENFILE},
		&net.OpError{Op: "accept", Err: syscall.ECONNABORTED},
	}
	l := Listen(&script{errs: errs, closed: make(chan struct{})}, "test", 10, nil, lg)
	c, err := l.Accept()
	if err != nil {
		t.Fatalf("Accept after EMFILE, ENFILE, ECONNABORTED: %v, want a connection", err)
	}
	c.Close()
	st := l.Counters().Stats()
	if st != (Stats{Open: 0, Accepted: 1, AcceptErrors: 3}) {
		t.Errorf("counters %+v, want 1 accepted, 3 accept errors, none open", st)
	}
	// One line per interval, the rest withheld and counted in the next.
	if n := strings.Count(logged.String(), "accept failed"); n != 1 {
		t.Errorf("%d log lines for 3 failed accepts within the interval, want 1:\n%s", n, logged.String())
	}
}

func TestAcceptCapClosesExcess(t *testing.T) {
	l := Listen(&script{closed: make(chan struct{})}, "test", 2, nil, nil)
	a, _ := l.Accept()
	b, _ := l.Accept()
	// The script's third and following connections are over the cap until
	// one closes; Accept must not hand them out.
	got := make(chan net.Conn)
	go func() {
		c, _ := l.Accept()
		got <- c
	}()
	deadline := time.Now().Add(5 * time.Second)
	for l.Counters().Stats().Refused < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("no refusals within 5 s with 2 of 2 open: %+v", l.Counters().Stats())
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-got:
		t.Fatal("Accept returned a third connection with the cap of 2 reached")
	default:
	}
	a.Close()
	a.Close() // closing twice frees one place only
	select {
	case c := <-got:
		c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("no connection within 5 s of one closing under the cap")
	}
	b.Close()
	if st := l.Counters().Stats(); st.Open != 0 || st.Accepted != 3 {
		t.Errorf("counters %+v, want 3 accepted, none open", st)
	}
}

// Close ends an Accept that waits out a backoff.
func TestCloseEndsBackoff(t *testing.T) {
	old := Backoff
	Backoff = [2]time.Duration{time.Hour, time.Hour}
	defer func() { Backoff = old }()
	l := Listen(&script{errs: []error{syscall.EMFILE}, closed: make(chan struct{})}, "test", 1, nil, nil)
	done := make(chan error)
	go func() {
		_, err := l.Accept()
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for l.Counters().Stats().AcceptErrors == 0 {
		if time.Now().After(deadline) {
			t.Fatal("Accept did not meet the scripted EMFILE within 5 s")
		}
		time.Sleep(time.Millisecond)
	}
	l.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waiting 5 s after Close")
	}
}

func TestErrorLogGoesToTheLogger(t *testing.T) {
	var logged bytes.Buffer
	el := ErrorLog(NewLimited(slog.New(slog.NewTextHandler(&logged, nil)), time.Hour), "web")
	el.Printf("http: TLS handshake error from 1.2.3.4:5: EOF")
	el.Printf("http: second line")
	if s := logged.String(); !strings.Contains(s, "web: http: TLS handshake error") || strings.Contains(s, "second") {
		t.Errorf("log %q: want the first line only, prefixed by the server's name", s)
	}
}
