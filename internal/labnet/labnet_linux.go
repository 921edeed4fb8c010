package labnet

import (
	"net/netip"
	"time"

	"github.com/pi2hop/pi2hop/netsys"
	"github.com/vishvananda/netlink"
)

// EthernetHeader is what a veth counts per packet beyond the IP packet;
// a TUN device counts none.
const EthernetHeader = 14

// Router is client ─ veth c0/rl ─ router ─ veth rw/s0 ─ server, three
// namespaces with IPv4 and IPv6 addresses and default routes through the
// router.
type Router struct {
	Client, Router, Server   string // namespace names
	ClientAddr, ServerAddr   netip.Addr
	ClientAddr6, ServerAddr6 netip.Addr
}

// The addresses of a Router: one /24 and one /64 on each side.
var (
	clientSide  = [2]string{"10.254.10.2/24", "10.254.10.1/24"}
	serverSide  = [2]string{"10.254.20.2/24", "10.254.20.1/24"}
	clientSide6 = [2]string{"fd00:254:10::2/64", "fd00:254:10::1/64"}
	serverSide6 = [2]string{"fd00:254:20::2/64", "fd00:254:20::1/64"}
)

// NewRouter builds a Router named after prefix, every change recorded in
// j (undo it to remove the lot). With forward the router forwards as the
// kernel does (ip_forward and IPv6 forwarding on): the reference path a
// hop is judged against. Without, nothing crosses until something is put
// between rl and rw, as `pi2hop run` is.
func NewRouter(j *netsys.Journal, prefix string, forward bool) (*Router, error) {
	r := &Router{Client: prefix + "c", Router: prefix + "r", Server: prefix + "s"}
	addr := func(p string) netip.Addr { return netip.MustParsePrefix(p).Addr() }
	r.ClientAddr, r.ServerAddr = addr(clientSide[0]), addr(serverSide[0])
	r.ClientAddr6, r.ServerAddr6 = addr(clientSide6[0]), addr(serverSide6[0])
	steps := []func() error{}
	for _, ns := range []string{r.Client, r.Router, r.Server} {
		steps = append(steps, func() error { return j.NewNamespace(ns) })
		// Addresses usable at once (no duplicate address detection): IPv6
		// neighbour discovery waits for them, and a first ping would wait
		// a second.
		for _, k := range []string{"net/ipv6/conf/all/accept_dad", "net/ipv6/conf/default/accept_dad"} {
			steps = append(steps, func() error { return netsys.WriteSysctl(ns, k, "0") })
		}
	}
	steps = append(steps,
		func() error { return j.AddVeth(r.Client, "c0", r.Router, "rl") },
		func() error { return j.AddVeth(r.Router, "rw", r.Server, "s0") })
	for _, a := range []struct {
		ns, dev string
		sides   [2]string
		i       int
	}{
		{r.Client, "c0", clientSide, 0}, {r.Router, "rl", clientSide, 1},
		{r.Router, "rw", serverSide, 1}, {r.Server, "s0", serverSide, 0},
		{r.Client, "c0", clientSide6, 0}, {r.Router, "rl", clientSide6, 1},
		{r.Router, "rw", serverSide6, 1}, {r.Server, "s0", serverSide6, 0},
	} {
		steps = append(steps, func() error { return j.AddAddr(a.ns, a.dev, netip.MustParsePrefix(a.sides[a.i])) })
	}
	for _, rt := range []struct{ ns, dev, dst, gw string }{
		{r.Client, "c0", "0.0.0.0/0", clientSide[1]}, {r.Server, "s0", "0.0.0.0/0", serverSide[1]},
		{r.Client, "c0", "::/0", clientSide6[1]}, {r.Server, "s0", "::/0", serverSide6[1]},
	} {
		steps = append(steps, func() error {
			return j.AddRoute(rt.ns, netsys.Route{Dst: netip.MustParsePrefix(rt.dst), Dev: rt.dev, Gw: addr(rt.gw)})
		})
	}
	if forward {
		steps = append(steps,
			func() error { return j.SetSysctl(r.Router, "net/ipv4/ip_forward", "1") },
			func() error { return j.SetSysctl(r.Router, "net/ipv6/conf/all/forwarding", "1") })
	}
	for _, f := range steps {
		if err := f(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// RxIPBytes is the IP bytes and the packets that dev in namespace ns has
// received: the device's counters less header bytes per packet
// (EthernetHeader on a veth, 0 on a TUN).
func RxIPBytes(ns, dev string, header uint64) (bytes, packets uint64, err error) {
	err = netsys.Do(ns, func() error {
		l, err := netlink.LinkByName(dev)
		if err != nil {
			return err
		}
		s := l.Attrs().Statistics
		bytes, packets = s.RxBytes-header*s.RxPackets, s.RxPackets
		return nil
	})
	return bytes, packets, err
}

// RxOver is what dev in ns received over d: IP bytes, packets and the
// time between the two readings.
func RxOver(ns, dev string, header uint64, d time.Duration) (bytes, packets uint64, dt time.Duration, err error) {
	b0, n0, err := RxIPBytes(ns, dev, header)
	t0 := time.Now()
	if err != nil {
		return 0, 0, 0, err
	}
	time.Sleep(d)
	b1, n1, err := RxIPBytes(ns, dev, header)
	return b1 - b0, n1 - n0, time.Since(t0), err
}

// RateOver is the IP rate, in bit/s, that dev in ns received over d.
func RateOver(ns, dev string, header uint64, d time.Duration) (float64, error) {
	b, _, dt, err := RxOver(ns, dev, header, d)
	return float64(b) * 8 / dt.Seconds(), err
}

// Bridge makes bridge name in namespace ns with ports (links already in
// ns) as its members, and brings it up: a LAN for devices on veth ports.
// It goes with the namespace.
func Bridge(ns, name string, ports ...string) error {
	return netsys.Do(ns, func() error {
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}
		if err := netlink.LinkAdd(br); err != nil {
			return err
		}
		for _, p := range ports {
			l, err := netlink.LinkByName(p)
			if err != nil {
				return err
			}
			if err := netlink.LinkSetMaster(l, br); err != nil {
				return err
			}
		}
		return netlink.LinkSetUp(br)
	})
}
