package netsys

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// ForwardAccept is a chain AcceptForward put accept rules into.
type ForwardAccept struct {
	Family nftables.TableFamily
	Table  string
	Chain  string
}

func (f ForwardAccept) String() string {
	return fmt.Sprintf("chain %s of table %s %s", f.Chain, FamilyName(f.Family), f.Table)
}

// FamilyName is nft's word for a table family ("ip", "ip6", "inet", ...).
func FamilyName(f nftables.TableFamily) string {
	switch f {
	case nftables.TableFamilyIPv4:
		return "ip"
	case nftables.TableFamilyIPv6:
		return "ip6"
	case nftables.TableFamilyINet:
		return "inet"
	case nftables.TableFamilyBridge:
		return "bridge"
	case nftables.TableFamilyNetdev:
		return "netdev"
	case nftables.TableFamilyARP:
		return "arp"
	}
	return fmt.Sprint(int(f))
}

// AcceptForward lets packets between the device pairs (in, out) be
// forwarded in namespace ns past every base chain on the forward hook
// that drops by policy, as Docker leaves the filter table's FORWARD
// chain. A drop in any base chain of a hook is final in nftables (an
// accept in a table of our own would not override it), so the accept
// rules go into that chain: at the top of Docker's DOCKER-USER chain in
// the same table when there is one (Docker's place for the user's rules,
// which its FORWARD chain jumps to first), else at the top of the
// dropping chain itself. The rules carry tag as their user data; each
// chain is journalled before its rules are added, and Undo deletes the
// rules with that tag. It returns the chains it changed (none when no
// chain drops).
func (j *Journal) AcceptForward(ns, tag string, pairs [][2]string) ([]ForwardAccept, error) {
	if tag == "" {
		return nil, errors.New("netsys: forward accept rules without a tag")
	}
	for _, p := range pairs {
		for _, d := range p {
			if d == "" || len(d) >= unix.IFNAMSIZ {
				return nil, fmt.Errorf("netsys: forward accept device %q: want a name of 1 to %d bytes", d, unix.IFNAMSIZ-1)
			}
		}
	}
	var chains []*nftables.Chain
	if err := nftConn(ns, func(c *nftables.Conn) error {
		var err error
		chains, err = c.ListChains()
		return err
	}); err != nil {
		return nil, fmt.Errorf("netsys: list nftables chains: %w", err)
	}
	var done []ForwardAccept
	for _, ch := range chains {
		if ch.Hooknum == nil || *ch.Hooknum != *nftables.ChainHookForward || ch.Policy == nil || *ch.Policy != nftables.ChainPolicyDrop {
			continue
		}
		target := ch
		for _, o := range chains {
			if o.Table.Name == ch.Table.Name && o.Table.Family == ch.Table.Family && o.Name == "DOCKER-USER" {
				target = o
			}
		}
		fa := ForwardAccept{Family: target.Table.Family, Table: target.Table.Name, Chain: target.Name}
		e := Entry{Kind: KindNftAccept, NS: ns, Name: tag, Family: int(fa.Family), NftTable: fa.Table, Chain: fa.Chain}
		if err := j.change(e, func() error {
			return nftConn(ns, func(c *nftables.Conn) error {
				for _, p := range pairs {
					c.InsertRule(&nftables.Rule{Table: target.Table, Chain: target, UserData: []byte(tag), Exprs: acceptExprs(p[0], p[1])})
				}
				return c.Flush()
			})
		}); err != nil {
			return done, fmt.Errorf("netsys: accept rules in %v: %w", fa, err)
		}
		done = append(done, fa)
	}
	return done, nil
}

// acceptExprs is the rule `iifname IN oifname OUT accept`.
func acceptExprs(in, out string) []expr.Any {
	name := func(d string) []byte {
		b := make([]byte, unix.IFNAMSIZ) // NUL-padded, as the kernel compares it
		copy(b, d)
		return b
	}
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: name(in)},
		&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: name(out)},
		&expr.Verdict{Kind: expr.VerdictAccept},
	}
}

// undoNftAccept deletes the rules tagged e.Name from their chain; a chain
// or table that is gone is not an error.
func undoNftAccept(e Entry) error {
	return nftConn(e.NS, func(c *nftables.Conn) error {
		t := &nftables.Table{Family: nftables.TableFamily(e.Family), Name: e.NftTable}
		rules, err := c.GetRules(t, &nftables.Chain{Name: e.Chain, Table: t})
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil
			}
			return fmt.Errorf("netsys: rules of chain %s: %w", e.Chain, err)
		}
		n := 0
		for _, r := range rules {
			if bytes.Equal(r.UserData, []byte(e.Name)) {
				if err := c.DelRule(r); err != nil {
					return err
				}
				n++
			}
		}
		if n == 0 {
			return nil
		}
		if err := c.Flush(); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("netsys: delete accept rules %s from chain %s: %w", e.Name, e.Chain, err)
		}
		return nil
	})
}
