package lan

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// DNSConfig is a forwarder on the LAN address to the box's resolvers.
type DNSConfig struct {
	// Listen are the box's LAN addresses with port 53, where the
	// devices ask (port 0 picks a free one, for tests).
	Listen    []netip.AddrPort
	Upstreams []netip.AddrPort // default Resolvers(ResolvConf)
	// Dial opens a connection to an upstream ("udp" or "tcp"); default a
	// net.Dialer in the calling goroutine's namespace, the host's.
	Dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	CacheSize int              // answers kept, default DefaultCacheSize
	Timeout   time.Duration    // per upstream try, default 2 s
	Now       func() time.Time // default time.Now
}

// ResolvConf is where the box's resolvers are listed.
const ResolvConf = "/etc/resolv.conf"

// DefaultCacheSize bounds the cache: a phone and a laptop ask for a few
// hundred names an hour.
const DefaultCacheSize = 1024

// Resolvers returns the nameservers listed in a resolv.conf(5) file.
func Resolvers(path string) ([]netip.AddrPort, error) {
	cc, err := dns.ClientConfigFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("lan: resolvers from %s: %w", path, err)
	}
	port, err := strconv.ParseUint(cc.Port, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("lan: resolvers from %s: port %q", path, cc.Port)
	}
	var ups []netip.AddrPort
	for _, s := range cc.Servers {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("lan: resolvers from %s: nameserver %q: %w", path, s, err)
		}
		ups = append(ups, netip.AddrPortFrom(a, uint16(port)))
	}
	if len(ups) == 0 {
		return nil, fmt.Errorf("lan: %s lists no nameserver: give one with --dns", path)
	}
	return ups, nil
}

// DNSForwarder answers the LAN's queries, UDP and TCP, from its cache or
// by asking the upstreams in turn.
type DNSForwarder struct {
	cfg     DNSConfig
	cache   *dnsCache
	log     *slog.Logger
	servers []*dns.Server // UDP and TCP for each listen address
	closing atomic.Bool
}

// NewDNSForwarder binds UDP and TCP on each of cfg.Listen in the
// namespace of the calling thread. Serve answers.
func NewDNSForwarder(cfg DNSConfig, log *slog.Logger) (*DNSForwarder, error) {
	if len(cfg.Listen) == 0 {
		return nil, errors.New("lan: DNS forwarder: no listen address")
	}
	if len(cfg.Upstreams) == 0 {
		ups, err := Resolvers(ResolvConf)
		if err != nil {
			return nil, err
		}
		cfg.Upstreams = ups
	}
	for _, u := range cfg.Upstreams {
		for _, l := range cfg.Listen {
			if u == l {
				return nil, fmt.Errorf("lan: DNS upstream %v is the forwarder itself", u)
			}
		}
	}
	if cfg.Dial == nil {
		var d net.Dialer
		cfg.Dial = d.DialContext
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &DNSForwarder{cfg: cfg, cache: newDNSCache(cfg.CacheSize), log: log}
	h := dns.HandlerFunc(f.serve)
	for _, l := range cfg.Listen {
		pc, err := net.ListenPacket("udp", l.String())
		if err != nil {
			f.closeSockets()
			return nil, fmt.Errorf("lan: DNS forwarder: %w", err)
		}
		f.servers = append(f.servers, &dns.Server{PacketConn: pc, Handler: h})
		ln, err := net.Listen("tcp", pc.LocalAddr().String()) // the same port, also when it was 0
		if err != nil {
			f.closeSockets()
			return nil, fmt.Errorf("lan: DNS forwarder: %w", err)
		}
		f.servers = append(f.servers, &dns.Server{Listener: ln, Handler: h})
	}
	return f, nil
}

// Addr is the forwarder's first UDP address (TCP is the same).
func (f *DNSForwarder) Addr() netip.AddrPort {
	return f.servers[0].PacketConn.LocalAddr().(*net.UDPAddr).AddrPort()
}

// Serve answers until Close; it returns nil after Close. If a server
// fails, it stops the others and returns the failure.
func (f *DNSForwarder) Serve() error {
	errc := make(chan error, len(f.servers))
	for _, s := range f.servers {
		go func() { errc <- s.ActivateAndServe() }()
	}
	err := <-errc
	closing := f.closing.Load()
	f.Close()
	for range f.servers[1:] {
		<-errc
	}
	if closing {
		return nil
	}
	return fmt.Errorf("lan: DNS forwarder: %w", err)
}

// Close stops the servers; Serve returns.
func (f *DNSForwarder) Close() error {
	if !f.closing.CompareAndSwap(false, true) {
		return nil
	}
	for _, s := range f.servers {
		if s.Shutdown() != nil {
			// Not started (yet): close the socket, so Serve returns at once.
			closeSocket(s)
		}
	}
	return nil
}

func (f *DNSForwarder) closeSockets() {
	for _, s := range f.servers {
		closeSocket(s)
	}
}

func closeSocket(s *dns.Server) {
	if s.PacketConn != nil {
		s.PacketConn.Close()
	}
	if s.Listener != nil {
		s.Listener.Close()
	}
}

// serve answers one query.
func (f *DNSForwarder) serve(w dns.ResponseWriter, req *dns.Msg) {
	_, tcp := w.LocalAddr().(*net.TCPAddr)
	resp := f.answer(req, tcp)
	if !tcp {
		// Fit the client's buffer (RFC 6891 section 6.2.3; 512 without
		// EDNS0): Truncate sets TC, and the client asks again over TCP.
		size := dns.MinMsgSize
		if o := req.IsEdns0(); o != nil && int(o.UDPSize()) > size {
			size = int(o.UDPSize())
		}
		resp.Truncate(size)
	}
	if err := w.WriteMsg(resp); err != nil {
		f.log.Debug("dns: write answer", "to", w.RemoteAddr().String(), "err", err)
	}
}

// answer returns the response to req, from the cache or upstream.
func (f *DNSForwarder) answer(req *dns.Msg, tcp bool) *dns.Msg {
	now := f.cfg.Now()
	key, cacheable := cacheKeyOf(req)
	if cacheable {
		if m := f.cache.get(key, now); m != nil {
			m.Id = req.Id
			return m
		}
	}
	resp, err := f.forward(req, tcp)
	if err != nil {
		f.log.Warn("dns: no upstream answered", "q", questionString(req), "err", err)
		m := new(dns.Msg)
		m.SetRcode(req, dns.RcodeServerFailure)
		return m
	}
	if cacheable {
		f.cache.put(key, resp, now)
	}
	resp.Id = req.Id
	return resp
}

// forward asks each upstream in turn, over the client's transport; an
// answer truncated over UDP is asked again over TCP, so the cache keeps
// whole answers.
func (f *DNSForwarder) forward(req *dns.Msg, tcp bool) (*dns.Msg, error) {
	q := req.Copy()
	q.Id = dns.Id() // our own ID upstream, not the client's
	var errs []error
	for _, up := range f.cfg.Upstreams {
		network := "udp"
		if tcp {
			network = "tcp"
		}
		resp, err := f.exchange(q, network, up)
		if err == nil && resp.Truncated && network == "udp" {
			resp, err = f.exchange(q, "tcp", up)
		}
		if err == nil {
			return resp, nil
		}
		errs = append(errs, fmt.Errorf("%s %v: %w", network, up, err))
	}
	return nil, errors.Join(errs...)
}

func (f *DNSForwarder) exchange(q *dns.Msg, network string, up netip.AddrPort) (*dns.Msg, error) {
	ctx, cancel := context.WithTimeout(context.Background(), f.cfg.Timeout)
	defer cancel()
	c, err := f.cfg.Dial(ctx, network, up.String())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	cl := &dns.Client{Net: network, Timeout: f.cfg.Timeout, UDPSize: dns.DefaultMsgSize}
	resp, _, err := cl.ExchangeWithConnContext(ctx, q, &dns.Conn{Conn: c})
	return resp, err
}

func questionString(m *dns.Msg) string {
	if len(m.Question) == 0 {
		return "(no question)"
	}
	q := m.Question[0]
	return q.Name + " " + dns.TypeToString[q.Qtype]
}
