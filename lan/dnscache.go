package lan

import (
	"container/list"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// maxCacheTTL caps how long an answer is kept, whatever its TTL says, so
// a changed record is seen within the hour.
const maxCacheTTL = time.Hour

// cacheKey is what makes two questions the same: the name (DNS names
// compare case-insensitively, RFC 4343), type and class, and the two
// flags that change the answer (DNSSEC records with DO, unvalidated
// answers with CD).
type cacheKey struct {
	name         string
	qtype, class uint16
	do, cd       bool
}

func cacheKeyOf(req *dns.Msg) (cacheKey, bool) {
	if len(req.Question) != 1 || req.Opcode != dns.OpcodeQuery {
		return cacheKey{}, false
	}
	q := req.Question[0]
	k := cacheKey{name: strings.ToLower(q.Name), qtype: q.Qtype, class: q.Qclass, cd: req.CheckingDisabled}
	if o := req.IsEdns0(); o != nil {
		k.do = o.Do()
	}
	return k, true
}

type cacheEntry struct {
	key    cacheKey
	msg    *dns.Msg
	stored time.Time
	ttl    time.Duration
}

// dnsCache keeps up to size answers, least recently used out first.
type dnsCache struct {
	mu    sync.Mutex
	size  int
	order *list.List // of *cacheEntry, most recent at the front
	byKey map[cacheKey]*list.Element
}

func newDNSCache(size int) *dnsCache {
	return &dnsCache{size: size, order: list.New(), byKey: map[cacheKey]*list.Element{}}
}

// cacheTTL is how long m may be kept, 0 for not at all: the smallest TTL
// of its records for an answer; for NXDOMAIN or NODATA the SOA's TTL
// capped by its MINIMUM field (RFC 2308 section 5); truncated or failed
// answers are not kept.
func cacheTTL(m *dns.Msg) time.Duration {
	if m.Truncated {
		return 0
	}
	var ttl uint32
	first := true
	min := func(t uint32) {
		if first || t < ttl {
			ttl, first = t, false
		}
	}
	switch {
	case m.Rcode == dns.RcodeSuccess && len(m.Answer) > 0:
		for _, sec := range [][]dns.RR{m.Answer, m.Ns, m.Extra} {
			for _, rr := range sec {
				if rr.Header().Rrtype != dns.TypeOPT {
					min(rr.Header().Ttl)
				}
			}
		}
	case m.Rcode == dns.RcodeNameError || m.Rcode == dns.RcodeSuccess:
		for _, rr := range m.Ns {
			if soa, ok := rr.(*dns.SOA); ok {
				min(soa.Hdr.Ttl)
				min(soa.Minttl)
			}
		}
	}
	if first {
		return 0
	}
	d := time.Duration(ttl) * time.Second
	if d > maxCacheTTL {
		d = maxCacheTTL
	}
	return d
}

func (c *dnsCache) put(k cacheKey, m *dns.Msg, now time.Time) {
	ttl := cacheTTL(m)
	if ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := &cacheEntry{key: k, msg: m.Copy(), stored: now, ttl: ttl}
	if el, ok := c.byKey[k]; ok {
		el.Value = e
		c.order.MoveToFront(el)
		return
	}
	c.byKey[k] = c.order.PushFront(e)
	for c.order.Len() > c.size {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.byKey, old.Value.(*cacheEntry).key)
	}
}

// get returns a copy of the answer for k with its TTLs counted down by
// the seconds it has been kept (so a device caches it no longer than the
// upstream allowed), or nil.
func (c *dnsCache) get(k cacheKey, now time.Time) *dns.Msg {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[k]
	if !ok {
		return nil
	}
	e := el.Value.(*cacheEntry)
	age := now.Sub(e.stored)
	if age >= e.ttl || age < 0 {
		c.order.Remove(el)
		delete(c.byKey, k)
		return nil
	}
	c.order.MoveToFront(el)
	m := e.msg.Copy()
	down := uint32(age / time.Second)
	for _, sec := range [][]dns.RR{m.Answer, m.Ns, m.Extra} {
		for _, rr := range sec {
			h := rr.Header()
			if h.Rrtype == dns.TypeOPT {
				continue
			}
			if h.Ttl > down {
				h.Ttl -= down
			} else {
				h.Ttl = 0
			}
		}
	}
	return m
}

func (c *dnsCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
