package lan

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sort"
	"time"

	"github.com/pi2hop/pi2hop/netsys"
	"github.com/vishvananda/netlink"
)

// StartShare addresses the LAN, turns on forwarding and NAT, and starts
// the DHCP server, DNS forwarder and (with IPv6) router advertisements.
// Every change to the system is recorded in j before it is made, so
// j.Undo removes it; on error Start closes what it started, and the
// caller undoes j.
func StartShare(j *netsys.Journal, cfg ShareConfig) (*Share, error) {
	if cfg.LAN == "" || cfg.WAN == "" || cfg.LAN == cfg.WAN {
		return nil, fmt.Errorf("lan: share: LAN %q and WAN %q: want two distinct devices", cfg.LAN, cfg.WAN)
	}
	if cfg.Table == "" {
		return nil, errors.New("lan: share: no nftables table name")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.ProbeWait == 0 {
		cfg.ProbeWait = 2 * time.Second
	}
	for _, dev := range []string{cfg.LAN, cfg.WAN} {
		if err := netsys.Do(cfg.NS, func() error { _, err := netlink.LinkByName(dev); return err }); err != nil {
			return nil, fmt.Errorf("lan: share: device %q: %w", dev, err)
		}
	}
	used, err := BoxInUse(cfg.NS)
	if err != nil {
		return nil, err
	}
	if cfg.Subnet.IsValid() {
		if err := CheckSubnet(cfg.Subnet, used); err != nil {
			return nil, fmt.Errorf("--subnet: %w", err)
		}
	} else if cfg.Subnet, err = ChooseSubnet(used); err != nil {
		return nil, err
	}
	s := &Share{Subnet: cfg.Subnet.Masked(), Router: RouterAddr(cfg.Subnet), cfg: cfg, errs: make(chan error, 3)}

	// The LAN must be up for the probe and for serving.
	if err := netsys.Do(cfg.NS, func() error {
		l, err := netlink.LinkByName(cfg.LAN)
		if err == nil {
			err = netlink.LinkSetUp(l)
		}
		return err
	}); err != nil {
		return nil, fmt.Errorf("lan: share: bring up %s: %w", cfg.LAN, err)
	}
	if cfg.ProbeWait > 0 {
		var other *OtherServer
		if err := netsys.Do(cfg.NS, func() (err error) { other, err = ProbeDHCP(cfg.LAN, cfg.ProbeWait); return }); err != nil {
			return nil, err
		}
		if other != nil {
			return nil, other
		}
	}

	v6 := false
	if !cfg.NoIPv6 {
		if v6, err = WANHasIPv6(cfg.NS, cfg.WAN); err != nil {
			return nil, err
		}
	}
	if v6 {
		s.ULA = cfg.ULA
		if !s.ULA.IsValid() {
			s.ULA = NewULA()
		}
		s.ULA = s.ULA.Masked()
		s.Router6 = RouterAddr6(s.ULA)
	}

	if err := j.AddAddr(cfg.NS, cfg.LAN, netip.PrefixFrom(s.Router, s.Subnet.Bits())); err != nil {
		return nil, err
	}
	sysctls := [][2]string{{"net/ipv4/ip_forward", "1"}}
	srcs := []netip.Prefix{s.Subnet}
	if v6 {
		if err := j.AddAddr(cfg.NS, cfg.LAN, netip.PrefixFrom(s.Router6, 64)); err != nil {
			return nil, err
		}
		// A router ignores RAs (forwarding=1) unless accept_ra is 2:
		// the WAN keeps the address and default route it learnt by SLAAC.
		// The box must not form addresses from its own advertisements,
		// which it may hear (multicast loopback).
		sysctls = append(sysctls,
			[2]string{"net/ipv6/conf/" + cfg.WAN + "/accept_ra", "2"},
			[2]string{"net/ipv6/conf/" + cfg.LAN + "/accept_ra", "0"},
			[2]string{"net/ipv6/conf/all/forwarding", "1"})
		srcs = append(srcs, s.ULA)
	}
	for _, kv := range sysctls {
		if err := j.SetSysctl(cfg.NS, kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	if err := j.AddNAT(cfg.NS, netsys.NAT{Table: cfg.Table, Out: cfg.WAN, Sources: srcs, CountLAN: cfg.LAN, WANSide: cfg.WANSide}); err != nil {
		return nil, err
	}

	// Upstream queries leave from the box's namespace: that of the
	// process when NS is "" (any goroutine's thread is in it).
	var dial func(ctx context.Context, network, addr string) (net.Conn, error)
	if cfg.NS != "" {
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			var c net.Conn
			err := netsys.Do(cfg.NS, func() (err error) {
				var d net.Dialer
				c, err = d.DialContext(ctx, network, addr)
				return
			})
			return c, err
		}
	}
	err = netsys.Do(cfg.NS, func() error {
		var err error
		s.dhcp, err = NewDHCPServer(DHCPConfig{Iface: cfg.LAN, Subnet: s.Subnet, Router: s.Router,
			LeaseTime: cfg.LeaseTime, Leases: cfg.Leases, OnChange: cfg.OnLeases}, cfg.Log)
		if err != nil {
			return err
		}
		listen := []netip.AddrPort{netip.AddrPortFrom(s.Router, 53)}
		if v6 {
			listen = append(listen, netip.AddrPortFrom(s.Router6, 53)) // the RDNSS address
		}
		s.dns, err = NewDNSForwarder(DNSConfig{Listen: listen, Upstreams: cfg.DNS, Dial: dial}, cfg.Log)
		if err != nil {
			return err
		}
		if v6 {
			s.ra, err = NewAdvertiser(RAConfig{Iface: cfg.LAN, Prefix: s.ULA, DNS: []netip.Addr{s.Router6}, Interval: cfg.RAInterval}, 5*time.Second, cfg.Log)
		}
		return err
	})
	if err != nil {
		s.Close()
		return nil, err
	}
	s.serve(s.dhcp.Serve)
	s.serve(s.dns.Serve)
	if s.ra != nil {
		s.serve(s.ra.Serve)
	}
	return s, nil
}

func (s *Share) serve(f func() error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := f(); err != nil {
			s.errs <- err
		}
	}()
}

// Err delivers the first failure of a server while the share runs.
func (s *Share) Err() <-chan error { return s.errs }

// Close stops the servers (the RA says goodbye with router lifetime 0);
// the journal undoes addresses, sysctls and the NAT table.
func (s *Share) Close() error {
	var errs []error
	s.once.Do(func() {
		if s.ra != nil {
			errs = append(errs, s.ra.Close())
		}
		if s.dns != nil {
			errs = append(errs, s.dns.Close())
		}
		if s.dhcp != nil {
			errs = append(errs, s.dhcp.Close())
		}
		s.wg.Wait()
	})
	return errors.Join(errs...)
}

// Leases returns the DHCP lease table.
func (s *Share) Leases() []Lease { return s.dhcp.Leases() }

// Clients joins the lease table with the per-address byte counters; an
// IPv6 address belongs to the device whose MAC the box's neighbour table
// has for it. Addresses of no known device are listed with an empty MAC.
func (s *Share) Clients() ([]Client, error) {
	counts, err := netsys.ClientBytes(s.cfg.NS, s.cfg.Table)
	if err != nil {
		return nil, err
	}
	macOf := map[netip.Addr]string{}
	err = netsys.Do(s.cfg.NS, func() error {
		l, err := netlink.LinkByName(s.cfg.LAN)
		if err != nil {
			return err
		}
		ns, err := netlink.NeighList(l.Attrs().Index, netlink.FAMILY_ALL)
		if err != nil {
			return err
		}
		for _, n := range ns {
			if a, ok := netip.AddrFromSlice(n.IP); ok && len(n.HardwareAddr) == 6 {
				macOf[a.Unmap()] = n.HardwareAddr.String()
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lan: neighbours on %s: %w", s.cfg.LAN, err)
	}
	byMAC := map[string]*Client{}
	var out []*Client
	for _, l := range s.Leases() {
		c := &Client{Lease: l}
		byMAC[l.MAC] = c
		out = append(out, c)
		macOf[l.Addr] = l.MAC // the lease decides for its own address
	}
	for a, b := range counts {
		mac := macOf[a]
		c := byMAC[mac]
		if c == nil || mac == "" {
			c = &Client{Lease: Lease{MAC: mac, Addr: a}}
			if mac != "" {
				byMAC[mac] = c
			}
			out = append(out, c)
		}
		if a.Is6() {
			c.Addrs6 = append(c.Addrs6, a)
		}
		c.Up += b.Up
		c.Down += b.Down
	}
	res := make([]Client, len(out))
	for i, c := range out {
		sort.Slice(c.Addrs6, func(i, j int) bool { return c.Addrs6[i].Less(c.Addrs6[j]) })
		res[i] = *c
	}
	sort.Slice(res, func(i, j int) bool {
		if res[i].Addr.Is4() != res[j].Addr.Is4() {
			return res[i].Addr.Is4()
		}
		return res[i].Addr.Less(res[j].Addr)
	})
	return res, nil
}
