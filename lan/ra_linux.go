package lan

import (
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/mdlayher/ndp"
	"golang.org/x/net/ipv6"
)

var (
	allNodes   = netip.MustParseAddr("ff02::1")
	allRouters = netip.MustParseAddr("ff02::2")
)

// Advertiser sends router advertisements on one LAN device: a few soon
// after start, then one every Interval or so, and one in answer to each
// router solicitation.
type Advertiser struct {
	cfg  RAConfig
	c    *ndp.Conn
	ifi  *net.Interface
	log  *slog.Logger
	rs   chan struct{}
	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu             sync.Mutex // guards served and closed
	served, closed bool       // Close waits for a Serve that started
}

// NewAdvertiser opens an ICMPv6 socket on cfg.Iface's link-local address
// (RAs must come from it, RFC 4861 section 4.2) in the namespace of the
// calling thread. A link-local address is usable only once duplicate
// address detection is done, about a second after the link came up:
// NewAdvertiser waits up to wait for it.
func NewAdvertiser(cfg RAConfig, wait time.Duration, log *slog.Logger) (*Advertiser, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ifi, err := net.InterfaceByName(cfg.Iface)
	if err != nil {
		return nil, fmt.Errorf("lan: RA on %q: %w", cfg.Iface, err)
	}
	deadline := time.Now().Add(wait)
	var c *ndp.Conn
	for {
		c, _, err = ndp.Listen(ifi, ndp.LinkLocal)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return nil, fmt.Errorf("lan: RA on %s: no usable link-local address within %v: %w", cfg.Iface, wait, err)
	}
	var f ipv6.ICMPFilter
	f.SetAll(true)
	f.Accept(ipv6.ICMPTypeRouterSolicitation)
	if err := c.SetICMPFilter(&f); err != nil {
		c.Close()
		return nil, fmt.Errorf("lan: RA on %s: %w", cfg.Iface, err)
	}
	if err := c.JoinGroup(allRouters); err != nil {
		c.Close()
		return nil, fmt.Errorf("lan: RA on %s: join %v: %w", cfg.Iface, allRouters, err)
	}
	return &Advertiser{cfg: cfg, c: c, ifi: ifi, log: log,
		rs: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}, nil
}

// Serve advertises until Close (once; a second call returns at once).
func (a *Advertiser) Serve() error {
	a.mu.Lock()
	if a.served || a.closed {
		a.mu.Unlock()
		return nil
	}
	a.served = true
	a.mu.Unlock()
	defer close(a.done)
	go a.readSolicitations()
	var last time.Time
	sent := 0
	next := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-a.stop:
			return nil
		case <-a.rs:
			// Answer after a random delay up to MAX_RA_DELAY_TIME, but not
			// sooner than MIN_DELAY_BETWEEN_RAS after the last one
			// (RFC 4861 section 6.2.6); all-nodes, so one answers many.
			at := time.Now().Add(mrand.N(maxRADelay))
			if min := last.Add(minDelayBetweenRAs); at.Before(min) {
				at = min
			}
			if at.Before(next) {
				next = at
				timer.Reset(time.Until(next))
			}
			continue
		case <-timer.C:
		}
		if err := a.send(false); err != nil {
			a.log.Warn("ra: send", "iface", a.cfg.Iface, "err", err)
		}
		last = time.Now()
		sent++
		gap := a.cfg.Interval/3 + mrand.N(a.cfg.Interval-a.cfg.Interval/3)
		if sent < initialRACount && gap > initialRAInterval {
			gap = initialRAInterval
		}
		next = last.Add(gap)
		timer.Reset(gap)
	}
}

func (a *Advertiser) send(final bool) error {
	return a.c.WriteTo(a.cfg.message(final, a.ifi.HardwareAddr, a.ifi.MTU), nil, allNodes)
}

func (a *Advertiser) readSolicitations() {
	for {
		m, _, from, err := a.c.ReadFrom()
		if err != nil {
			return // closed
		}
		if _, ok := m.(*ndp.RouterSolicitation); !ok {
			continue
		}
		a.log.Debug("ra: solicitation", "from", from.String())
		select {
		case a.rs <- struct{}{}:
		default: // one already pending answers this one too
		}
	}
}

// Close sends a final advertisement with every lifetime 0, so devices
// stop routing through the box at once (see RAConfig.message), and
// closes the socket.
func (a *Advertiser) Close() error {
	var err error
	a.once.Do(func() {
		a.mu.Lock()
		a.closed = true
		served := a.served
		a.mu.Unlock()
		close(a.stop)
		if served {
			<-a.done
		}
		err = a.send(true)
		if cerr := a.c.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = errors.Join(err, cerr)
		}
	})
	return err
}
