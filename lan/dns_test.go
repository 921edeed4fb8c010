package lan

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// upstream is a tiny authoritative server for the test zone on
// 127.0.0.1, UDP and TCP on one port, counting what it was asked.
type upstream struct {
	addr      netip.AddrPort
	udp, tcp  atomic.Int32
	mu        sync.Mutex
	lastAsked string
}

const bigTXT = 40 // records in big.test., more than 512 bytes

func startUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{}
	h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		_, tcp := w.LocalAddr().(*net.TCPAddr)
		if tcp {
			u.tcp.Add(1)
		} else {
			u.udp.Add(1)
		}
		m := new(dns.Msg)
		m.SetReply(r)
		m.Authoritative = true
		q := r.Question[0]
		u.mu.Lock()
		u.lastAsked = q.Name
		u.mu.Unlock()
		switch strings.ToLower(q.Name) {
		case "phone.test.":
			rr, _ := dns.NewRR("phone.test. 300 IN A 10.66.0.7")
			m.Answer = append(m.Answer, rr)
		case "big.test.":
			for i := 0; i < bigTXT; i++ {
				rr, _ := dns.NewRR("big.test. 300 IN TXT \"padding padding padding padding\"")
				m.Answer = append(m.Answer, rr)
			}
		default:
			m.Rcode = dns.RcodeNameError
			soa, _ := dns.NewRR("test. 3600 IN SOA ns.test. admin.test. 1 3600 600 86400 60")
			m.Ns = append(m.Ns, soa)
		}
		if !tcp {
			m.Truncate(dns.MinMsgSize) // as a real server does for a 512-byte client
		}
		w.WriteMsg(m)
	})
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	u.addr = pc.LocalAddr().(*net.UDPAddr).AddrPort()
	for _, s := range []*dns.Server{{PacketConn: pc, Handler: h}, {Listener: ln, Handler: h}} {
		go s.ActivateAndServe()
		t.Cleanup(func() { s.Shutdown() })
	}
	return u
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func startForwarder(t *testing.T, clock *fakeClock, size int, ups ...netip.AddrPort) *DNSForwarder {
	t.Helper()
	f, err := NewDNSForwarder(DNSConfig{Listen: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}, Upstreams: ups, CacheSize: size, Timeout: 500 * time.Millisecond, Now: clock.now}, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- f.Serve() }()
	t.Cleanup(func() {
		f.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve after Close: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return within 5 s of Close")
		}
	})
	return f
}

func ask(t *testing.T, f *DNSForwarder, network, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	c := &dns.Client{Net: network, Timeout: 3 * time.Second}
	r, _, err := c.Exchange(m, f.Addr().String())
	if err != nil {
		t.Fatalf("%s query %s: %v", network, name, err)
	}
	return r
}

func TestForwarderAnswersAndCaches(t *testing.T) {
	up := startUpstream(t)
	clock := &fakeClock{t: t0}
	f := startForwarder(t, clock, 0, up.addr)

	r := ask(t, f, "udp", "phone.test.", dns.TypeA)
	if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "10.66.0.7" || r.Answer[0].Header().Ttl != 300 {
		t.Fatalf("answer %v, want phone.test. 300 A 10.66.0.7", r.Answer)
	}
	clock.add(10 * time.Second)
	// From the cache, whatever the case of the name and over TCP too,
	// with the TTL counted down by the 10 s it was kept.
	for _, c := range []struct{ network, name string }{{"udp", "PHONE.test."}, {"tcp", "phone.test."}} {
		r = ask(t, f, c.network, c.name, dns.TypeA)
		if len(r.Answer) != 1 || r.Answer[0].Header().Ttl != 290 {
			t.Errorf("%s %s from cache: %v, want TTL 290", c.network, c.name, r.Answer)
		}
	}
	if n := up.udp.Load() + up.tcp.Load(); n != 1 {
		t.Errorf("upstream asked %d times, want once (cache)", n)
	}
	clock.add(290 * time.Second) // the TTL is up
	ask(t, f, "udp", "phone.test.", dns.TypeA)
	if n := up.udp.Load(); n != 2 {
		t.Errorf("upstream asked %d times over UDP after the TTL ran out, want 2", n)
	}
}

func TestForwarderTCPAndTruncation(t *testing.T) {
	up := startUpstream(t)
	f := startForwarder(t, &fakeClock{t: t0}, 0, up.addr)
	// A TCP question goes upstream over TCP.
	r := ask(t, f, "tcp", "nothere.test.", dns.TypeA)
	if r.Rcode != dns.RcodeNameError || up.tcp.Load() != 1 || up.udp.Load() != 0 {
		t.Errorf("TCP: rcode %v, upstream udp %d tcp %d; want NXDOMAIN over TCP", dns.RcodeToString[r.Rcode], up.udp.Load(), up.tcp.Load())
	}
	// A big answer: truncated upstream over UDP, fetched whole over TCP,
	// given to a 512-byte client with TC set, whole over TCP (cached).
	r = ask(t, f, "udp", "big.test.", dns.TypeTXT)
	if !r.Truncated {
		t.Errorf("UDP answer of %d records without EDNS0 not truncated", len(r.Answer))
	}
	if up.tcp.Load() != 2 {
		t.Errorf("upstream TCP queries %d, want 2 (the truncated answer asked again)", up.tcp.Load())
	}
	r = ask(t, f, "tcp", "big.test.", dns.TypeTXT)
	if r.Truncated || len(r.Answer) != bigTXT {
		t.Errorf("TCP answer: truncated %v, %d records; want all %d", r.Truncated, len(r.Answer), bigTXT)
	}
	if up.tcp.Load() != 2 {
		t.Errorf("upstream TCP queries %d after the cached big answer, want 2", up.tcp.Load())
	}
}

func TestForwarderFallsBackAndFails(t *testing.T) {
	up := startUpstream(t)
	// Nothing listens on the first upstream: a UDP port we bound and closed.
	pc, _ := net.ListenPacket("udp", "127.0.0.1:0")
	dead := pc.LocalAddr().(*net.UDPAddr).AddrPort()
	pc.Close()
	f := startForwarder(t, &fakeClock{t: t0}, 0, dead, up.addr)
	if r := ask(t, f, "udp", "phone.test.", dns.TypeA); len(r.Answer) != 1 {
		t.Errorf("with the first upstream down: %v, want the second's answer", r)
	}
	g := startForwarder(t, &fakeClock{t: t0}, 0, dead)
	if r := ask(t, g, "udp", "phone.test.", dns.TypeA); r.Rcode != dns.RcodeServerFailure {
		t.Errorf("no upstream: rcode %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
}

func TestCacheTTL(t *testing.T) {
	rr := func(s string) dns.RR {
		r, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	soa := rr("test. 3600 IN SOA ns.test. admin.test. 1 3600 600 86400 60")
	for _, c := range []struct {
		name string
		m    dns.Msg
		want time.Duration
	}{
		{"smallest record TTL", dns.Msg{Answer: []dns.RR{rr("a.test. 300 IN CNAME b.test."), rr("b.test. 30 IN A 10.0.0.1")}}, 30 * time.Second},
		{"capped at an hour", dns.Msg{Answer: []dns.RR{rr("a.test. 86400 IN A 10.0.0.1")}}, time.Hour},
		{"NXDOMAIN: SOA minimum", dns.Msg{MsgHdr: dns.MsgHdr{Rcode: dns.RcodeNameError}, Ns: []dns.RR{soa}}, 60 * time.Second},
		{"NODATA: SOA minimum", dns.Msg{Ns: []dns.RR{soa}}, 60 * time.Second},
		{"NXDOMAIN without SOA", dns.Msg{MsgHdr: dns.MsgHdr{Rcode: dns.RcodeNameError}}, 0},
		{"SERVFAIL", dns.Msg{MsgHdr: dns.MsgHdr{Rcode: dns.RcodeServerFailure}, Ns: []dns.RR{soa}}, 0},
		{"truncated", dns.Msg{MsgHdr: dns.MsgHdr{Truncated: true}, Answer: []dns.RR{rr("a.test. 300 IN A 10.0.0.1")}}, 0},
		{"TTL 0", dns.Msg{Answer: []dns.RR{rr("a.test. 0 IN A 10.0.0.1")}}, 0},
	} {
		if got := cacheTTL(&c.m); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCacheIsBounded(t *testing.T) {
	c := newDNSCache(2)
	msg := func(name string) (cacheKey, *dns.Msg) {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		a, _ := dns.NewRR(name + " 300 IN A 10.0.0.1")
		m.Answer = []dns.RR{a}
		k, _ := cacheKeyOf(m)
		return k, m
	}
	ka, ma := msg("a.test.")
	kb, mb := msg("b.test.")
	kc, mc := msg("c.test.")
	c.put(ka, ma, t0)
	c.put(kb, mb, t0)
	c.get(ka, t0) // a is now the most recently used
	c.put(kc, mc, t0)
	if c.len() != 2 || c.get(kb, t0) != nil || c.get(ka, t0) == nil || c.get(kc, t0) == nil {
		t.Errorf("after 3 puts into 2 places: %d kept, want a and c (b least recently used)", c.len())
	}
}

func TestResolvers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	os.WriteFile(path, []byte("# test\nsearch lan\nnameserver 127.0.0.53\nnameserver fd00::1\noptions edns0\n"), 0o644)
	got, err := Resolvers(path)
	want := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.53:53"), netip.MustParseAddrPort("[fd00::1]:53")}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Resolvers = %v, %v; want %v", got, err, want)
	}
	os.WriteFile(path, []byte("search lan\n"), 0o644)
	if _, err := Resolvers(path); err == nil || !strings.Contains(err.Error(), "--dns") {
		t.Errorf("no nameserver: %v, want an error pointing at --dns", err)
	}
	_, err = NewDNSForwarder(DNSConfig{Listen: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:5353")}, Upstreams: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:5353")}}, nil)
	if err == nil || !strings.Contains(err.Error(), "forwarder itself") {
		t.Errorf("upstream = listen address: %v, want refused", err)
	}
}
