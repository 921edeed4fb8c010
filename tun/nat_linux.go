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
	return j.AddMasqueradeOut(ns, name, "", srcs...)
}

// AddMasqueradeOut is AddMasquerade for packets that leave by device oif
// only ("" = any device): the source NAT of a router whose WAN is oif.
// An IPv6 source prefix gets NAT66 the same way (masquerade to the
// address of oif), for a ULA prefix that the WAN would not route back.
//
// The table is made over netlink (google/nftables) in one batch, so it
// is there whole or not at all; it is recorded first, so a crash in
// between leaves a record for Undo.
func (j *Journal) AddMasqueradeOut(ns, name, oif string, srcs ...netip.Prefix) error {
	if !nftNameRE.MatchString(name) {
		return fmt.Errorf("tun: nftables table name %q: want a letter, then letters, digits, '_' or '-' (at most 32)", name)
	}
	if len(oif) >= unix.IFNAMSIZ {
		return fmt.Errorf("tun: masquerade out of %q: device names are at most %d bytes", oif, unix.IFNAMSIZ-1)
	}
	if len(srcs) == 0 {
		return errors.New("tun: masquerade: no source prefix")
	}
	for _, p := range srcs {
		if !p.IsValid() {
			return fmt.Errorf("tun: masquerade source %v: want ADDR/LEN", p)
		}
	}
	forget, err := j.record(Entry{Kind: KindNftTable, NS: ns, Name: name})
	if err != nil {
		return err
	}
	if err := addMasqTable(ns, name, oif, srcs); err != nil {
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

func addMasqTable(ns, name, oif string, srcs []netip.Prefix) error {
	return nftConn(ns, func(c *nftables.Conn) error {
		t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: name})
		accept := nftables.ChainPolicyAccept
		ch := c.AddChain(&nftables.Chain{
			Name:     "postrouting",
			Table:    t,
			Type:     nftables.ChainTypeNAT,
			Hooknum:  nftables.ChainHookPostrouting,
			Priority: nftables.ChainPriorityNATSource,
			Policy:   &accept,
		})
		for _, p := range srcs {
			c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: masqExprs(oif, p)})
		}
		if err := c.Flush(); err != nil {
			return fmt.Errorf("tun: create nftables table inet %s in namespace %q: %w", name, ns, err)
		}
		return nil
	})
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
