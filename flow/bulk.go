package flow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// DefaultBulkCC is the congestion control BulkServe gives its flows:
// the classic load of the lab (the kernel's own default may be bbr, which
// ignores CE marks).
const DefaultBulkCC = "cubic"

// BulkOptions configures BulkServeWith.
type BulkOptions struct {
	CC string // congestion control per connection (TCP_CONGESTION); "" keeps the socket's
}

// BulkServe accepts connections on ln and sends each as fast as kernel
// TCP allows, with cubic, until the peer closes or ctx is done.
func BulkServe(ctx context.Context, ln net.Listener) error {
	return BulkServeWith(ctx, ln, BulkOptions{CC: DefaultBulkCC})
}

// BulkServeWith is BulkServe with a choice of congestion control. It
// returns nil once ctx is done (it closes ln then), or the accept error.
func BulkServeWith(ctx context.Context, ln net.Listener, opt BulkOptions) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]struct{}{}
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	defer func() {
		stop()
		wg.Wait()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("bulk: accept: %w", err)
		}
		if opt.CC != "" {
			if sc, ok := c.(syscall.Conn); ok {
				if err := SetCongestion(sc, opt.CC); err != nil {
					c.Close()
					return err
				}
			}
		}
		mu.Lock()
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			blast(c)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
			c.Close()
		}()
	}
}

// blast writes to c until a write fails (the peer closed, or we did).
func blast(c net.Conn) {
	buf := make([]byte, 128<<10)
	for {
		if _, err := c.Write(buf); err != nil {
			return
		}
	}
}

// BulkFetch reads from conn (a connection to a BulkServe) for d (0 = until
// ctx is done or the server closes) and reports goodput every second;
// it closes conn at the end.
func BulkFetch(ctx context.Context, conn net.Conn, d time.Duration, report func(Interval)) (BulkSummary, error) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	start := time.Now()
	end := time.Time{}
	if d > 0 {
		end = start.Add(d)
		conn.SetReadDeadline(end)
	}
	var (
		s        BulkSummary
		buf      = make([]byte, 256<<10)
		ivStart  = start
		ivBytes  int64
		secBytes int64
		secEnd   = start.Add(time.Second)
		nextRep  = start.Add(time.Second)
		finalErr error
	)
	emit := func(now time.Time) {
		dur := now.Sub(ivStart)
		iv := Interval{Flow: "bulk", T: now.Sub(start).Seconds(), Dur: dur.Seconds(), GoodputBps: bps(ivBytes, dur)}
		s.Intervals = append(s.Intervals, iv)
		if report != nil {
			report(iv)
		}
		ivStart, ivBytes = now, 0
	}
	for {
		n, err := conn.Read(buf)
		now := time.Now()
		for !now.Before(secEnd) {
			s.PerSecond = append(s.PerSecond, float64(secBytes)*8)
			secBytes = 0
			secEnd = secEnd.Add(time.Second)
		}
		s.Bytes += int64(n)
		ivBytes += int64(n)
		secBytes += int64(n)
		if !now.Before(nextRep) {
			emit(now)
			nextRep = nextRep.Add(time.Second)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isTimeout(err) {
				finalErr = fmt.Errorf("bulk: read: %w", err)
			}
			if ivBytes > 0 || len(s.Intervals) == 0 {
				emit(now)
			}
			s.Duration = now.Sub(start)
			if !end.IsZero() && now.After(end) {
				s.Duration = d
			}
			s.GoodputBps = bps(s.Bytes, s.Duration)
			return s, finalErr
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
