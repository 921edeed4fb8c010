package check

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/flow/ecnudp"
)

// DefaultPort is the responder's port when --to names none.
const DefaultPort = 9332

// Options are the client's settings.
type Options struct {
	Target   string        // HOST[:PORT]; the port defaults to DefaultPort
	Probes   int           // per codepoint and direction
	Interval time.Duration // between probes
	// Wait is how long the responder has to answer the first hello;
	// resolving the name and the wait together stay within 5 s.
	Wait time.Duration
	// Load runs the load test after the transitions: LoadDuration of an
	// L4S and a classic flow together, never over MaxRate bit/s (IP
	// packets, probes included).
	Load         bool
	LoadDuration time.Duration
	MaxRate      uint64
}

// DefaultOptions are the settings `pi2hop check` starts from.
func DefaultOptions() Options {
	return Options{Probes: 25, Interval: 10 * time.Millisecond, Wait: 3 * time.Second,
		Load: true, LoadDuration: DefaultLoadDuration, MaxRate: DefaultMaxRate}
}

// Direction is one direction's table and verdict.
type Direction struct {
	Table   Table
	Verdict Verdict
	// Partial says the responder's own count never came back: the
	// forward table then holds only probes whose echo returned, and
	// the reverse table's sent counts are those echoes.
	Partial bool
}

// Result is a path check's outcome.
type Result struct {
	Target  string         // as given
	Peer    netip.AddrPort // the address probed
	Probes  int            // per codepoint and direction
	Forward Direction      // client to responder
	Reverse Direction      // responder to client
	RTT     time.Duration  // the median round trip of the echoes
	Load    *Load          // the load test's, when it ran
}

// Ready reports whether ECN passes both ways and, when the load test ran,
// the bottleneck is an L4S dual-queue AQM.
func (r *Result) Ready() bool {
	return r.Forward.Verdict.Kind == Passes && r.Reverse.Verdict.Kind == Passes && (r.Load == nil || r.Load.Verdict.Ready())
}

// TargetError is a --to value that cannot be used: malformed, or a name
// that does not resolve.
type TargetError struct {
	Target, Why string
}

func (e *TargetError) Error() string { return fmt.Sprintf("%s: %s", e.Target, e.Why) }

// UnreachableError is a responder that did not answer, or a name that
// does not resolve.
type UnreachableError struct {
	Addr string // the address, or the name, tried
	Why  string
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("no responder at %s: %s", e.Addr, e.Why)
}

// ParseTarget splits HOST[:PORT] (an IPv6 literal in brackets when a
// port follows) into host and port.
func ParseTarget(target string) (host string, port uint16, err error) {
	bad := &TargetError{target, "want HOST[:PORT], like 192.0.2.1, example.net:9332 or [2001:db8::1]:9332"}
	if target == "" {
		return "", 0, bad
	}
	bare := target
	if strings.HasPrefix(target, "[") && strings.HasSuffix(target, "]") {
		bare = target[1 : len(target)-1]
	}
	if a, err := netip.ParseAddr(bare); err == nil {
		return a.String(), DefaultPort, nil // an address without a port, IPv6 too
	}
	h, p, err := net.SplitHostPort(target)
	if err != nil {
		if strings.ContainsAny(target, ":[]") {
			return "", 0, bad
		}
		return target, DefaultPort, nil
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 || h == "" {
		return "", 0, bad
	}
	return h, uint16(n), nil
}

// Resolve finds the address to probe for target, within a few seconds.
func Resolve(ctx context.Context, target string) (netip.AddrPort, error) {
	host, port, err := ParseTarget(target)
	if err != nil {
		return netip.AddrPort{}, err
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return netip.AddrPortFrom(a.Unmap(), port), nil
	}
	ctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return netip.AddrPort{}, &UnreachableError{target, fmt.Sprintf("cannot resolve %q: %v", host, err)}
	}
	return netip.AddrPortFrom(addrs[0].Unmap(), port), nil
}

// client is one run's socket and what its reader collected.
type client struct {
	conn    *net.UDPConn
	peer    netip.AddrPort
	session uint32

	mu       sync.Mutex
	sentAt   map[uint16]time.Time
	echoed   map[uint16]bool
	fwd, rev Table // from the echoes
	rtts     []time.Duration
	summary  *msg
	icmpErr  error // the last ICMP error the socket reported
	hello    chan struct{}
	gotSum   chan struct{}
	loadAck  chan struct{}
	ports    [3]uint16 // the responder's load sinks
	gotRep   chan struct{}
	report   *[2][4]uint32 // what the load's flows arrived as, by the responder's count
}

// Path runs the path check against the responder at opts.Target.
func Path(ctx context.Context, opts Options) (*Result, error) {
	if opts.Probes < 1 || opts.Probes > 1000 {
		return nil, fmt.Errorf("probes per codepoint: %d not in 1..1000", opts.Probes)
	}
	if opts.Load && (opts.LoadDuration <= 0 || opts.LoadDuration > MaxLoadDuration) {
		return nil, fmt.Errorf("load duration %v: want more than 0 and at most %v", opts.LoadDuration, MaxLoadDuration)
	}
	if opts.Load && opts.MaxRate < MinMaxRate {
		return nil, fmt.Errorf("load rate cap %d bit/s: want at least %d", opts.MaxRate, MinMaxRate)
	}
	peer, err := Resolve(ctx, opts.Target)
	if err != nil {
		return nil, err
	}
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(peer))
	if err != nil {
		return nil, &UnreachableError{peer.String(), err.Error()}
	}
	defer conn.Close()
	if err := ecnudp.EnableReceive(conn); err != nil {
		return nil, err
	}
	if err := ecnudp.EnableTTL(conn); err != nil {
		return nil, err
	}
	c := &client{conn: conn, peer: peer, session: rand.Uint32(),
		sentAt: map[uint16]time.Time{}, echoed: map[uint16]bool{},
		hello: make(chan struct{}, 1), gotSum: make(chan struct{}, 1), loadAck: make(chan struct{}, 1), gotRep: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() { defer close(done); c.read() }()
	defer func() { conn.Close(); <-done }()

	if err := c.greet(ctx, opts.Wait); err != nil {
		return nil, err
	}
	sent, err := c.train(ctx, opts)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	// Late echoes: four times the slowest round trip seen, within
	// bounds (a path's delay varies; a few are always lost).
	drain := 500 * time.Millisecond
	if len(c.rtts) > 0 {
		drain = min(max(200*time.Millisecond, 4*slowest(c.rtts)), 3*time.Second)
	}
	c.mu.Unlock()
	if err := sleep(ctx, drain); err != nil {
		return nil, err
	}
	if err := c.ask(ctx, msg{typ: typeSummaryReq, session: c.session}, c.gotSum, 300*time.Millisecond, 5); err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	r := c.result(opts, sent)
	if opts.Load {
		if r.Load, err = c.runLoad(ctx, opts); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// greet sends hellos until the responder answers, wait passes, or the
// peer's port turns out closed.
func (c *client) greet(ctx context.Context, wait time.Duration) error {
	tries := max(int(wait/(250*time.Millisecond)), 1)
	err := c.ask(ctx, msg{typ: typeHello, session: c.session}, c.hello, 250*time.Millisecond, tries)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(c.icmpError(), syscall.ECONNREFUSED):
		return &UnreachableError{c.peer.String(), "the port is closed (ICMP port unreachable): is `pi2hop check --serve` running there?"}
	case c.icmpError() != nil:
		return &UnreachableError{c.peer.String(), c.icmpError().Error()}
	case err != errNoAnswer:
		return &UnreachableError{c.peer.String(), err.Error()}
	}
	return &UnreachableError{c.peer.String(), fmt.Sprintf("no answer within %v: is `pi2hop check --serve` running there, and is UDP port %d open?", wait.Round(time.Millisecond), c.peer.Port())}
}

var errNoAnswer = errors.New("no answer")

// ask sends m every period until ch signals, tries times at most.
func (c *client) ask(ctx context.Context, m msg, ch chan struct{}, period time.Duration, tries int) error {
	b := appendMsg(nil, m)
	for range tries {
		if _, err := c.conn.Write(b); err != nil && !isICMP(err) {
			return err
		}
		t := time.NewTimer(period)
		select {
		case <-ch:
			t.Stop()
			return nil
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if c.icmpError() != nil {
			return errNoAnswer
		}
	}
	return errNoAnswer
}

// train sends the probes: probe i in codepoint order[i%4], its echo to
// come back in order[(i%4+i/4)%4]. Each run of four probes asks for all
// four codepoints back, so each direction gets Probes of each, and each
// forward codepoint carries every reverse one in turn, so a forward
// codepoint that is dropped still leaves the reverse direction all four.
// It returns the probes sent per codepoint.
func (c *client) train(ctx context.Context, opts Options) ([4]int, error) {
	var sent [4]int
	tick := time.NewTicker(opts.Interval)
	defer tick.Stop()
	var b, oob []byte
	for i := range 4 * opts.Probes {
		fwd, rev := order[i%4], order[(i%4+i/4)%4]
		tos := ProbeDSCP<<2 | uint8(fwd)
		seq := uint16(i)
		b = appendMsg(b[:0], msg{typ: typeProbe, session: c.session, seq: seq, sentTOS: tos, echoECN: rev})
		oob = ecnudp.AppendTOS(oob[:0], c.peer, tos)
		c.mu.Lock()
		c.sentAt[seq] = time.Now()
		c.mu.Unlock()
		if _, _, err := c.conn.WriteMsgUDP(b, oob, nil); err == nil {
			sent[fwd]++
		} else if !isICMP(err) {
			return sent, err
		}
		select {
		case <-ctx.Done():
			return sent, ctx.Err()
		case <-tick.C:
		}
	}
	return sent, nil
}

// read collects answers until the socket closes.
func (c *client) read() {
	buf, oob := make([]byte, 2048), make([]byte, ecnudp.OOBSize)
	for {
		n, oobn, _, _, err := c.conn.ReadMsgUDPAddrPort(buf, oob)
		if err != nil {
			if isICMP(err) {
				c.mu.Lock()
				c.icmpErr = err
				c.mu.Unlock()
				continue
			}
			return
		}
		now := time.Now()
		m, err := parseMsg(buf[:n])
		if err != nil || m.session != c.session {
			continue
		}
		switch m.typ {
		case typeHelloAck:
			signal(c.hello)
		case typeSummary:
			c.mu.Lock()
			c.summary = &m
			c.mu.Unlock()
			signal(c.gotSum)
		case typeEcho:
			c.echo(m, ecnudp.ParseControl(oob[:oobn]), now)
		case typeLoadAck:
			c.mu.Lock()
			c.ports = m.ports
			c.mu.Unlock()
			signal(c.loadAck)
		case typeLoadReport:
			c.mu.Lock()
			c.report = &m.loadArrived
			c.mu.Unlock()
			signal(c.gotRep)
		}
	}
}

// echo records one echo: the reverse direction from how it arrived, the
// forward one (in case the summary is lost) from what it reports.
func (c *client) echo(m msg, ctl ecnudp.Control, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.sentAt[m.seq]
	if !ok || c.echoed[m.seq] {
		return // not ours, or a duplicate
	}
	c.echoed[m.seq] = true
	c.rtts = append(c.rtts, now.Sub(at))
	if m.flags&flagTOS != 0 {
		s, r := aqm.ECN(m.sentTOS&3), aqm.ECN(m.arrivedTOS&3)
		c.fwd.Sent[s]++
		c.fwd.Arrived[s][r]++
		if m.arrivedTOS == 0 {
			c.fwd.TOSZero[s][r]++
		}
		if m.flags&flagTTL != 0 {
			c.fwd.TTLMin, c.fwd.TTLMax = ttlRange(c.fwd.TTLMin, c.fwd.TTLMax, m.arrivedTTL)
		}
	}
	if ctl.HasECN {
		s := aqm.ECN(m.echoTOS & 3)
		c.rev.Sent[s]++
		c.rev.Arrived[s][ctl.ECN]++
		if ctl.TOS == 0 {
			c.rev.TOSZero[s][ctl.ECN]++
		}
	}
	if ctl.HasTTL {
		c.rev.TTLMin, c.rev.TTLMax = ttlRange(c.rev.TTLMin, c.rev.TTLMax, ctl.TTL)
	}
}

func ttlRange(lo, hi int, ttl uint8) (int, int) {
	if lo == 0 || int(ttl) < lo {
		lo = int(ttl)
	}
	return lo, max(hi, int(ttl))
}

// result puts the tables together: the forward direction as the
// responder counted it, the reverse as the echoes arrived.
func (c *client) result(opts Options, sent [4]int) *Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := &Result{Target: opts.Target, Peer: c.peer, Probes: opts.Probes, RTT: median(c.rtts)}
	r.Forward.Table, r.Reverse.Table = c.fwd, c.rev
	if s := c.summary; s != nil {
		f := Table{Sent: sent, TTLMin: int(s.ttlMin), TTLMax: int(s.ttlMax)}
		for i := range 4 {
			for j := range 4 {
				f.Arrived[i][j], f.TOSZero[i][j] = int(s.arrived[i][j]), int(s.tosZero[i][j])
			}
			r.Reverse.Table.Sent[i] = int(s.echoes[i])
		}
		r.Forward.Table = f
	} else {
		r.Forward.Partial, r.Reverse.Partial = true, true
	}
	r.Forward.Verdict = Judge(r.Forward.Table)
	r.Reverse.Verdict = Judge(r.Reverse.Table)
	return r
}

func (c *client) icmpError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.icmpErr
}

// isICMP reports whether err is an ICMP error the connected socket
// reports for an earlier datagram: closed port, host or network
// unreachable.
func isICMP(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func slowest(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

// median is the nearest-rank median round trip.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return figure.Quantile(s, 0.5)
}
