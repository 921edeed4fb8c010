package netsys

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

var nftNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,31}$`)

// AddMasquerade creates nftables table name (family inet) in namespace ns
// with one postrouting chain that masquerades packets from the given
// source prefixes, whatever device they leave by, so that a namespace
// behind the hop reaches the network with the host's address.
func (j *Journal) AddMasquerade(ns, name string, srcs ...netip.Prefix) error {
	return j.AddNAT(ns, NAT{Table: name, Sources: srcs})
}

// AddMasqueradeOut is AddMasquerade for packets that leave by device oif
// only ("" = any device): the source NAT of a router whose WAN is oif.
func (j *Journal) AddMasqueradeOut(ns, name, oif string, srcs ...netip.Prefix) error {
	return j.AddNAT(ns, NAT{Table: name, Out: oif, Sources: srcs})
}

// AddNAT creates table n.Table in namespace ns. The table is made over
// netlink (google/nftables) in one batch, so it is there whole or not at
// all; it is recorded first, so a crash in between leaves a record for
// Undo, which deletes the table.
func (j *Journal) AddNAT(ns string, n NAT) error {
	if !nftNameRE.MatchString(n.Table) {
		return fmt.Errorf("netsys: nftables table name %q: want a letter, then letters, digits, '_' or '-' (at most 32)", n.Table)
	}
	for _, d := range append([]string{n.Out, n.CountLAN}, n.WANSide...) {
		if len(d) >= unix.IFNAMSIZ {
			return fmt.Errorf("netsys: NAT device %q: device names are at most %d bytes", d, unix.IFNAMSIZ-1)
		}
	}
	if len(n.Sources) == 0 {
		return errors.New("netsys: masquerade: no source prefix")
	}
	for _, p := range n.Sources {
		if !p.IsValid() {
			return fmt.Errorf("netsys: masquerade source %v: want ADDR/LEN", p)
		}
	}
	return j.change(Entry{Kind: KindNftTable, NS: ns, Name: n.Table}, func() error { return addNATTable(ns, n) })
}

// nftConn opens an nftables connection whose netlink socket lives in ns.
func nftConn(ns string, f func(c *nftables.Conn) error) error {
	h, err := nsHandle(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	var opts []nftables.ConnOption
	if !isCurrent(h) { // entering ns needs CAP_SYS_ADMIN, even the current one
		opts = append(opts, nftables.WithNetNSFd(int(h)))
	}
	c, err := nftables.New(opts...)
	if err != nil {
		return fmt.Errorf("netsys: nftables in namespace %q: %w", ns, err)
	}
	return f(c)
}

func addNATTable(ns string, n NAT) error {
	return nftConn(ns, func(c *nftables.Conn) error {
		t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: n.Table})
		accept := nftables.ChainPolicyAccept
		ch := c.AddChain(&nftables.Chain{
			Name:     "postrouting",
			Table:    t,
			Type:     nftables.ChainTypeNAT,
			Hooknum:  nftables.ChainHookPostrouting,
			Priority: nftables.ChainPriorityNATSource,
			Policy:   &accept,
		})
		for _, p := range n.Sources {
			c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: masqExprs(n.Out, p)})
		}
		if n.CountLAN != "" {
			if err := addCounting(c, t, n.CountLAN, n.Sources); err != nil {
				return err
			}
		}
		if len(n.WANSide) > 0 {
			addZones(c, t, n.Out, n.WANSide)
		}
		if err := c.Flush(); err != nil {
			return fmt.Errorf("netsys: create nftables table inet %s in namespace %q: %w", n.Table, ns, err)
		}
		return nil
	})
}

// Per-address byte counting: four dynamic sets (up and down, IPv4 and
// IPv6) whose elements each carry a counter, filled by a forward chain
// with, for each source prefix P of the LAN:
//
//	iifname LAN oifname != LAN ip saddr P update @up4 { ip saddr counter }
//	oifname LAN iifname != LAN ip daddr P update @down4 { ip daddr counter }
//
// (ip6 and @up6, @down6 for an IPv6 prefix). Only the LAN's own unicast
// addresses are counted, and only traffic that crosses the box: on a
// bridge with br_netfilter, frames between two ports of the LAN and its
// multicast pass this hook too. A set holds at most countSetSize
// addresses; past that a new address is forwarded but not counted.
const countSetSize = 4096

var countSets = []struct {
	name string
	v6   bool
	up   bool
}{{"up4", false, true}, {"down4", false, false}, {"up6", true, true}, {"down6", true, false}}

func addCounting(c *nftables.Conn, t *nftables.Table, lan string, srcs []netip.Prefix) error {
	accept := nftables.ChainPolicyAccept
	ch := c.AddChain(&nftables.Chain{
		Name:     "count",
		Table:    t,
		Type:     nftables.ChainTypeFilter,
		Hooknum:  nftables.ChainHookForward,
		Priority: nftables.ChainPriorityFilter,
		Policy:   &accept,
	})
	name := make([]byte, unix.IFNAMSIZ)
	copy(name, lan)
	for _, cs := range countSets {
		kt := nftables.TypeIPAddr
		if cs.v6 {
			kt = nftables.TypeIP6Addr
		}
		set := &nftables.Set{Table: t, Name: cs.name, KeyType: kt, Dynamic: true, Size: countSetSize}
		if err := c.AddSet(set, nil); err != nil {
			return fmt.Errorf("netsys: nftables set %s: %w", cs.name, err)
		}
		in, out := expr.MetaKeyIIFNAME, expr.MetaKeyOIFNAME
		if !cs.up {
			in, out = out, in
		}
		for _, p := range srcs {
			if p.Addr().Is6() != cs.v6 {
				continue
			}
			off := addrOffset(p, cs.up)
			es := []expr.Any{
				&expr.Meta{Key: in, Register: 1},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: name},
				&expr.Meta{Key: out, Register: 1},
				&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: name},
			}
			es = append(es, prefixMatch(p, off)...)
			es = append(es,
				&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: uint32(p.Addr().BitLen() / 8)},
				&expr.Dynset{SrcRegKey: 1, SetName: set.Name, SetID: set.ID, Operation: uint32(unix.NFT_DYNSET_OP_UPDATE),
					Exprs: []expr.Any{&expr.Counter{}}})
			c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: es})
		}
	}
	return nil
}

// wanZone is the conntrack zone of the WAN side (zone 0, the default, is
// the LAN side's).
const wanZone = 1

// addZones puts the WAN side in conntrack zone wanZone before conntrack
// sees a packet (priority raw, -300):
//
//	prerouting: iifname DEV ct zone set 1   (each of wanSide)
//	output:     oifname OUT ct zone set 1   (the box's own traffic)
func addZones(c *nftables.Conn, t *nftables.Table, out string, wanSide []string) {
	accept := nftables.ChainPolicyAccept
	for _, h := range []struct {
		name string
		hook *nftables.ChainHook
		key  expr.MetaKey
		devs []string
	}{
		{"zone-in", nftables.ChainHookPrerouting, expr.MetaKeyIIFNAME, wanSide},
		{"zone-out", nftables.ChainHookOutput, expr.MetaKeyOIFNAME, []string{out}},
	} {
		if out == "" && h.key == expr.MetaKeyOIFNAME {
			continue
		}
		ch := c.AddChain(&nftables.Chain{Name: h.name, Table: t, Type: nftables.ChainTypeFilter,
			Hooknum: h.hook, Priority: nftables.ChainPriorityRaw, Policy: &accept})
		for _, d := range h.devs {
			name := make([]byte, unix.IFNAMSIZ)
			copy(name, d)
			c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: []expr.Any{
				&expr.Meta{Key: h.key, Register: 1},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: name},
				&expr.Immediate{Register: 1, Data: binaryutil.NativeEndian.PutUint16(wanZone)},
				&expr.Ct{Key: expr.CtKeyZONE, Register: 1, SourceRegister: true},
			}})
		}
	}
}

// addrOffset is where the source (src) or destination address of p's
// family is in the network header: 12 or 16 in IPv4, 8 or 24 in IPv6.
func addrOffset(p netip.Prefix, src bool) uint32 {
	switch {
	case p.Addr().Is4() && src:
		return 12
	case p.Addr().Is4():
		return 16
	case src:
		return 8
	}
	return 24
}

// prefixMatch is `meta nfproto F` and `ip[6] saddr|daddr P` (the address
// at off): the packet's family first, then its masked address.
func prefixMatch(p netip.Prefix, off uint32) []expr.Any {
	p = p.Masked()
	proto := byte(unix.NFPROTO_IPV4)
	if p.Addr().Is6() {
		proto = unix.NFPROTO_IPV6
	}
	addr := p.Addr().AsSlice()
	mask := make([]byte, len(addr))
	for i := 0; i < p.Bits(); i++ {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: uint32(len(addr))},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: uint32(len(addr)), Mask: mask, Xor: make([]byte, len(addr))},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: addr},
	}
}

// ClientBytes reads the per-address counters of a NAT table made with
// CountLAN.
func ClientBytes(ns, table string) (map[netip.Addr]Bytes, error) {
	out := map[netip.Addr]Bytes{}
	err := nftConn(ns, func(c *nftables.Conn) error {
		t := &nftables.Table{Family: nftables.TableFamilyINet, Name: table}
		for _, cs := range countSets {
			set, err := c.GetSetByName(t, cs.name)
			if err != nil {
				return fmt.Errorf("netsys: nftables set %s of table %s: %w", cs.name, table, err)
			}
			els, err := c.GetSetElements(set)
			if err != nil {
				return fmt.Errorf("netsys: elements of nftables set %s: %w", cs.name, err)
			}
			for _, e := range els {
				a, ok := netip.AddrFromSlice(e.Key)
				if !ok || e.Counter == nil {
					continue
				}
				b := out[a]
				if cs.up {
					b.Up += e.Counter.Bytes
				} else {
					b.Down += e.Counter.Bytes
				}
				out[a] = b
			}
		}
		return nil
	})
	return out, err
}

// masqExprs is the rule `[oifname OIF] ip saddr P masquerade` (ip6 for
// an IPv6 prefix) as nftables expressions.
func masqExprs(oif string, p netip.Prefix) []expr.Any {
	var es []expr.Any
	if oif != "" {
		name := make([]byte, unix.IFNAMSIZ) // NUL-padded, as the kernel compares it
		copy(name, oif)
		es = append(es,
			&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: name})
	}
	es = append(es, prefixMatch(p, addrOffset(p, true))...)
	return append(es, &expr.Masq{})
}

// NftTableExists reports whether table name (family inet) is in ns.
func NftTableExists(ns, name string) (bool, error) {
	var found bool
	err := nftConn(ns, func(c *nftables.Conn) error {
		ts, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
		if err != nil {
			return fmt.Errorf("netsys: list nftables tables in namespace %q: %w", ns, err)
		}
		for _, t := range ts {
			found = found || t.Name == name
		}
		return nil
	})
	return found, err
}

// undoNftTable deletes the table with its chains and rules; one that is
// not there is not an error.
func undoNftTable(e Entry) error {
	return nftConn(e.NS, func(c *nftables.Conn) error {
		c.DelTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: e.Name})
		if err := c.Flush(); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("netsys: delete nftables table inet %s: %w", e.Name, err)
		}
		return nil
	})
}
