package tun

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"

	"github.com/google/nftables"
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
		return fmt.Errorf("tun: nftables table name %q: want a letter, then letters, digits, '_' or '-' (at most 32)", n.Table)
	}
	for _, d := range []string{n.Out, n.CountLAN} {
		if len(d) >= unix.IFNAMSIZ {
			return fmt.Errorf("tun: NAT device %q: device names are at most %d bytes", d, unix.IFNAMSIZ-1)
		}
	}
	if len(n.Sources) == 0 {
		return errors.New("tun: masquerade: no source prefix")
	}
	for _, p := range n.Sources {
		if !p.IsValid() {
			return fmt.Errorf("tun: masquerade source %v: want ADDR/LEN", p)
		}
	}
	forget, err := j.record(Entry{Kind: KindNftTable, NS: ns, Name: n.Table})
	if err != nil {
		return err
	}
	if err := addNATTable(ns, n); err != nil {
		forget()
		return err
	}
	return nil
}

// nftConn opens an nftables connection whose netlink socket lives in ns.
func nftConn(ns string, f func(c *nftables.Conn) error) error {
	h, err := nsHandle(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	c, err := nftables.New(nftables.WithNetNSFd(int(h)))
	if err != nil {
		return fmt.Errorf("tun: nftables in namespace %q: %w", ns, err)
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
			if err := addCounting(c, t, n.CountLAN); err != nil {
				return err
			}
		}
		if err := c.Flush(); err != nil {
			return fmt.Errorf("tun: create nftables table inet %s in namespace %q: %w", n.Table, ns, err)
		}
		return nil
	})
}

// Per-address byte counting: four dynamic sets (up and down, IPv4 and
// IPv6) whose elements each carry a counter, filled by a forward chain:
//
//	meta nfproto ipv4 iifname LAN update @up4 { ip saddr counter }
//	meta nfproto ipv4 oifname LAN update @down4 { ip daddr counter }
//
// and the same for ip6. A set holds at most countSetSize addresses; past
// that a new address is forwarded but not counted.
const countSetSize = 4096

var countSets = []struct {
	name  string
	v6    bool
	up    bool
	off   uint32 // source (up) or destination (down) address in the header
	proto byte
}{
	{"up4", false, true, 12, unix.NFPROTO_IPV4},
	{"down4", false, false, 16, unix.NFPROTO_IPV4},
	{"up6", true, true, 8, unix.NFPROTO_IPV6},
	{"down6", true, false, 24, unix.NFPROTO_IPV6},
}

func addCounting(c *nftables.Conn, t *nftables.Table, lan string) error {
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
		kt, alen := nftables.TypeIPAddr, uint32(4)
		if cs.v6 {
			kt, alen = nftables.TypeIP6Addr, 16
		}
		set := &nftables.Set{Table: t, Name: cs.name, KeyType: kt, Dynamic: true, Size: countSetSize}
		if err := c.AddSet(set, nil); err != nil {
			return fmt.Errorf("tun: nftables set %s: %w", cs.name, err)
		}
		dev := expr.MetaKeyIIFNAME
		if !cs.up {
			dev = expr.MetaKeyOIFNAME
		}
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: []expr.Any{
			&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{cs.proto}},
			&expr.Meta{Key: dev, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: name},
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: cs.off, Len: alen},
			&expr.Dynset{SrcRegKey: 1, SetName: set.Name, SetID: set.ID, Operation: uint32(unix.NFT_DYNSET_OP_UPDATE),
				Exprs: []expr.Any{&expr.Counter{}}},
		}})
	}
	return nil
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
				return fmt.Errorf("tun: nftables set %s of table %s: %w", cs.name, table, err)
			}
			els, err := c.GetSetElements(set)
			if err != nil {
				return fmt.Errorf("tun: elements of nftables set %s: %w", cs.name, err)
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

// masqExprs is the rule `[oifname OIF] ip saddr P masquerade` (ip6 for an
// IPv6 prefix) as nftables expressions: in an inet table the rule first
// matches the packet's family (meta nfproto), then the masked source
// address at its offset in the IPv4 (12) or IPv6 (8) header.
func masqExprs(oif string, p netip.Prefix) []expr.Any {
	p = p.Masked()
	proto, off := byte(unix.NFPROTO_IPV4), uint32(12)
	if p.Addr().Is6() {
		proto, off = unix.NFPROTO_IPV6, 8
	}
	addr := p.Addr().AsSlice()
	mask := make([]byte, len(addr))
	for i := 0; i < p.Bits(); i++ {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	var es []expr.Any
	if oif != "" {
		name := make([]byte, unix.IFNAMSIZ) // NUL-padded, as the kernel compares it
		copy(name, oif)
		es = append(es,
			&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: name})
	}
	es = append(es,
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: uint32(len(addr))},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: uint32(len(addr)), Mask: mask, Xor: make([]byte, len(addr))},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: addr},
		&expr.Masq{})
	return es
}

// NftTableExists reports whether table name (family inet) is in ns.
func NftTableExists(ns, name string) (bool, error) {
	var found bool
	err := nftConn(ns, func(c *nftables.Conn) error {
		ts, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
		if err != nil {
			return fmt.Errorf("tun: list nftables tables in namespace %q: %w", ns, err)
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
			return fmt.Errorf("tun: delete nftables table inet %s: %w", e.Name, err)
		}
		return nil
	})
}
