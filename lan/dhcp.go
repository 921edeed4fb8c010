package lan

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/iana"
)

// DefaultLeaseTime is how long a lease lasts unless renewed: an hour, so
// a device that left frees its address soon, and one that stays renews
// (at half of it, RFC 2131 section 4.4.5) a few times an hour.
const DefaultLeaseTime = time.Hour

// offerHold is how long an offered address stays reserved for the client
// it was offered to while it decides (RFC 2131 section 4.3.1 leaves the
// time to the server).
const offerHold = 30 * time.Second

// DHCPConfig is a DHCPv4 server for one LAN.
type DHCPConfig struct {
	Iface     string        // the LAN device the server binds to
	Subnet    netip.Prefix  // the LAN, e.g. 192.168.2.0/24
	Router    netip.Addr    // the box on the LAN: router, server identifier; default RouterAddr(Subnet)
	DNS       []netip.Addr  // DNS servers for the devices; default Router
	LeaseTime time.Duration // default DefaultLeaseTime
	Leases    []Lease       // a saved table to start from (LoadLeases)
	// OnChange, if set, is called with the whole table (sorted by
	// address) after each change, e.g. to save it with SaveLeases. It is
	// called with the server's lock held, so changes arrive in order.
	OnChange func([]Lease)
	Now      func() time.Time // default time.Now
}

func (c *DHCPConfig) fill() error {
	if !c.Subnet.IsValid() || !c.Subnet.Addr().Is4() || c.Subnet.Bits() > 30 {
		return fmt.Errorf("lan: DHCP subnet %v: want an IPv4 prefix of /30 or shorter", c.Subnet)
	}
	c.Subnet = c.Subnet.Masked()
	if !c.Router.IsValid() {
		c.Router = RouterAddr(c.Subnet)
	}
	if !c.Subnet.Contains(c.Router) {
		return fmt.Errorf("lan: DHCP router %v is not in subnet %v", c.Router, c.Subnet)
	}
	if len(c.DNS) == 0 {
		c.DNS = []netip.Addr{c.Router}
	}
	if c.LeaseTime == 0 {
		c.LeaseTime = DefaultLeaseTime
	}
	if c.LeaseTime < 10*time.Second {
		return fmt.Errorf("lan: DHCP lease time %v: want at least 10s", c.LeaseTime)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

type offer struct {
	addr  netip.Addr
	until time.Time
}

// leaseTable is the server's state and its answer to each message; it
// does no I/O, so the rules are tested without sockets. One lease per
// client hardware address.
type leaseTable struct {
	cfg      DHCPConfig
	leases   map[string]Lease // by MAC
	offers   map[string]offer // by MAC
	declined map[netip.Addr]time.Time
}

func newLeaseTable(cfg DHCPConfig) *leaseTable {
	t := &leaseTable{cfg: cfg, leases: map[string]Lease{}, offers: map[string]offer{}, declined: map[netip.Addr]time.Time{}}
	for _, l := range cfg.Leases {
		if t.inPool(l.Addr) {
			t.leases[l.MAC] = l
		}
	}
	return t
}

// inPool reports whether a is a host address of the subnet other than
// the router's.
func (t *leaseTable) inPool(a netip.Addr) bool {
	p := t.cfg.Subnet
	return a.Is4() && p.Contains(a) && a != p.Addr() && a != broadcastAddr(p) && a != t.cfg.Router
}

func broadcastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	for i := p.Bits(); i < 32; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	return netip.AddrFrom4(b)
}

// busy reports whether a is held for a client other than mac.
func (t *leaseTable) busy(a netip.Addr, mac string, now time.Time) bool {
	if until, ok := t.declined[a]; ok && now.Before(until) {
		return true
	}
	for m, l := range t.leases {
		if m != mac && l.Addr == a && l.Active(now) {
			return true
		}
	}
	for m, o := range t.offers {
		if m != mac && o.addr == a && now.Before(o.until) {
			return true
		}
	}
	return false
}

// pick chooses an address for mac: the one it had, else the one it asks
// for, else the lowest address nobody ever had, else the one whose lease
// expired longest ago (whose record then goes).
func (t *leaseTable) pick(mac string, asked netip.Addr, now time.Time) (netip.Addr, bool) {
	if l, ok := t.leases[mac]; ok && !t.busy(l.Addr, mac, now) {
		return l.Addr, true
	}
	if o, ok := t.offers[mac]; ok && !t.busy(o.addr, mac, now) {
		return o.addr, true
	}
	if t.inPool(asked) && !t.busy(asked, mac, now) && !t.recorded(asked, mac) {
		return asked, true
	}
	p := t.cfg.Subnet
	for a := p.Addr(); p.Contains(a); a = a.Next() {
		if t.inPool(a) && !t.busy(a, mac, now) && !t.recorded(a, mac) {
			return a, true
		}
	}
	var oldest string
	for m, l := range t.leases {
		if m != mac && !t.busy(l.Addr, mac, now) && (oldest == "" || l.Expiry.Before(t.leases[oldest].Expiry)) {
			oldest = m
		}
	}
	if oldest == "" {
		return netip.Addr{}, false
	}
	a := t.leases[oldest].Addr
	delete(t.leases, oldest)
	return a, true
}

// recorded reports whether another client's lease, even an expired one,
// names a: that client gets it back if it returns.
func (t *leaseTable) recorded(a netip.Addr, mac string) bool {
	for m, l := range t.leases {
		if m != mac && l.Addr == a {
			return true
		}
	}
	return false
}

// prune forgets offers and declines that ran out, so clients that only
// ever DISCOVER (a MAC that changes each time) leave nothing behind.
func (t *leaseTable) prune(now time.Time) {
	for m, o := range t.offers {
		if !now.Before(o.until) {
			delete(t.offers, m)
		}
	}
	for a, until := range t.declined {
		if !now.Before(until) {
			delete(t.declined, a)
		}
	}
}

// list returns the table sorted by address.
func (t *leaseTable) list() []Lease {
	ls := make([]Lease, 0, len(t.leases))
	for _, l := range t.leases {
		ls = append(ls, l)
	}
	sortLeases(ls)
	return ls
}

var errIgnore = errors.New("ignored")

// handle answers req at now: the reply (nil for none), whether the
// lease table changed, and why a message was ignored.
func (t *leaseTable) handle(req *dhcpv4.DHCPv4, now time.Time) (*dhcpv4.DHCPv4, bool, error) {
	if req.OpCode != dhcpv4.OpcodeBootRequest {
		return nil, false, fmt.Errorf("%w: op %v", errIgnore, req.OpCode)
	}
	if req.HWType != iana.HWTypeEthernet || len(req.ClientHWAddr) != 6 {
		return nil, false, fmt.Errorf("%w: hardware type %v, address %v", errIgnore, req.HWType, req.ClientHWAddr)
	}
	if !req.GatewayIPAddr.IsUnspecified() && req.GatewayIPAddr != nil {
		return nil, false, fmt.Errorf("%w: relayed by %v (relays are not served)", errIgnore, req.GatewayIPAddr)
	}
	t.prune(now)
	mac := req.ClientHWAddr.String()
	router := net.IP(t.cfg.Router.AsSlice())
	switch req.MessageType() {
	case dhcpv4.MessageTypeDiscover:
		asked, _ := netip.AddrFromSlice(req.RequestedIPAddress().To4())
		a, ok := t.pick(mac, asked, now)
		if !ok {
			return nil, false, fmt.Errorf("%w: DISCOVER from %s: no free address in %v", errIgnore, mac, t.cfg.Subnet)
		}
		t.offers[mac] = offer{addr: a, until: now.Add(offerHold)}
		r, err := t.reply(req, dhcpv4.MessageTypeOffer, a)
		return r, false, err

	case dhcpv4.MessageTypeRequest:
		sid := req.ServerIdentifier()
		if sid != nil && !sid.Equal(router) {
			// SELECTING another server's offer (RFC 2131 section 4.3.2).
			delete(t.offers, mac)
			return nil, false, fmt.Errorf("%w: %s chose server %v", errIgnore, mac, sid)
		}
		var want netip.Addr
		if ci, ok := netip.AddrFromSlice(req.ClientIPAddr.To4()); ok && !ci.IsUnspecified() && sid == nil {
			want = ci // RENEWING or REBINDING
		} else {
			want, _ = netip.AddrFromSlice(req.RequestedIPAddress().To4()) // SELECTING or INIT-REBOOT
		}
		if !t.inPool(want) || t.busy(want, mac, now) {
			// Not ours to give: the client must start over (section 4.3.2).
			r, err := t.nak(req)
			return r, false, err
		}
		delete(t.offers, mac)
		t.leases[mac] = Lease{MAC: mac, Addr: want, Hostname: req.HostName(), Expiry: now.Add(t.cfg.LeaseTime)}
		r, err := t.reply(req, dhcpv4.MessageTypeAck, want)
		return r, true, err

	case dhcpv4.MessageTypeDecline:
		// The client found the address in use (ARP): keep it out of the
		// pool for a lease time (section 4.3.3).
		a, _ := netip.AddrFromSlice(req.RequestedIPAddress().To4())
		if !t.inPool(a) {
			return nil, false, fmt.Errorf("%w: DECLINE of %v", errIgnore, a)
		}
		t.declined[a] = now.Add(t.cfg.LeaseTime)
		delete(t.offers, mac)
		changed := false
		if l, ok := t.leases[mac]; ok && l.Addr == a {
			delete(t.leases, mac)
			changed = true
		}
		return nil, changed, nil

	case dhcpv4.MessageTypeRelease:
		// Keep the record, so the device gets the same address back.
		l, ok := t.leases[mac]
		if !ok || !l.Active(now) || !l.Addr.Is4() || !net.IP(l.Addr.AsSlice()).Equal(req.ClientIPAddr) {
			return nil, false, fmt.Errorf("%w: RELEASE of %v by %s, which holds no such lease", errIgnore, req.ClientIPAddr, mac)
		}
		l.Expiry = now
		t.leases[mac] = l
		return nil, true, nil

	case dhcpv4.MessageTypeInform:
		// Configuration only, no address and no lease time (section 3.4).
		r, err := dhcpv4.NewReplyFromRequest(req,
			dhcpv4.WithMessageType(dhcpv4.MessageTypeAck),
			dhcpv4.WithOption(dhcpv4.OptServerIdentifier(router)),
			dhcpv4.WithNetmask(net.CIDRMask(t.cfg.Subnet.Bits(), 32)),
			dhcpv4.WithRouter(router),
			dhcpv4.WithDNS(ips(t.cfg.DNS)...),
		)
		return r, false, err
	}
	return nil, false, fmt.Errorf("%w: message type %v", errIgnore, req.MessageType())
}

func ips(as []netip.Addr) []net.IP {
	r := make([]net.IP, len(as))
	for i, a := range as {
		r[i] = a.AsSlice()
	}
	return r
}

// reply is an OFFER or ACK of address a with the LAN's configuration.
func (t *leaseTable) reply(req *dhcpv4.DHCPv4, typ dhcpv4.MessageType, a netip.Addr) (*dhcpv4.DHCPv4, error) {
	lt := t.cfg.LeaseTime
	return dhcpv4.NewReplyFromRequest(req,
		dhcpv4.WithMessageType(typ),
		dhcpv4.WithYourIP(a.AsSlice()),
		dhcpv4.WithOption(dhcpv4.OptServerIdentifier(t.cfg.Router.AsSlice())),
		dhcpv4.WithNetmask(net.CIDRMask(t.cfg.Subnet.Bits(), 32)),
		dhcpv4.WithOption(dhcpv4.OptBroadcastAddress(broadcastAddr(t.cfg.Subnet).AsSlice())),
		dhcpv4.WithRouter(t.cfg.Router.AsSlice()),
		dhcpv4.WithDNS(ips(t.cfg.DNS)...),
		dhcpv4.WithOption(dhcpv4.OptIPAddressLeaseTime(lt)),
		// T1 and T2 at RFC 2131 section 4.4.5's defaults, 0.5 and 0.875.
		dhcpv4.WithOption(dhcpv4.OptRenewTimeValue(lt/2)),
		dhcpv4.WithOption(dhcpv4.OptRebindingTimeValue(lt*7/8)),
	)
}

// nak carries only the message type and server identifier (RFC 2131
// table 3) and is always broadcast (section 4.1).
func (t *leaseTable) nak(req *dhcpv4.DHCPv4) (*dhcpv4.DHCPv4, error) {
	return dhcpv4.NewReplyFromRequest(req,
		dhcpv4.WithMessageType(dhcpv4.MessageTypeNak),
		dhcpv4.WithOption(dhcpv4.OptServerIdentifier(t.cfg.Router.AsSlice())),
		dhcpv4.WithBroadcast(true),
	)
}

// replyDest is where a reply goes (RFC 2131 section 4.1): a NAK to
// everyone, a client that has an address (ciaddr) by unicast, any other
// by broadcast, which every client accepts. (Unicast to yiaddr before
// the client has it would need an ARP entry made by hand.)
func replyDest(req, reply *dhcpv4.DHCPv4) *net.UDPAddr {
	ci := req.ClientIPAddr.To4()
	if reply.MessageType() != dhcpv4.MessageTypeNak && ci != nil && !ci.IsUnspecified() {
		return &net.UDPAddr{IP: ci, Port: dhcpv4.ClientPort}
	}
	return &net.UDPAddr{IP: net.IPv4bcast, Port: dhcpv4.ClientPort}
}
