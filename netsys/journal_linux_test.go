package netsys

import (
	"net/netip"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/vishvananda/netlink"
)

func TestJournalBuildsAndUndoes(t *testing.T) {
	roottest.Need(t)
	state := filepath.Join(t.TempDir(), "state.json")
	j := NewJournal(SaveFile(state))
	t.Cleanup(func() { j.Undo() })
	ns := roottest.Name("p2t")
	if err := j.NewNamespace(ns); err != nil {
		t.Fatal(err)
	}
	// A veth link (the kernels we run on may lack the dummy module): tun,
	// whose devices would do, sits above netsys, and its tests use
	// netsys's namespaces.
	dev := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: ns + "t", MTU: 1400}, PeerName: ns + "p"}
	err := j.AddLink(ns, dev.Name, func() error {
		if err := netlink.LinkAdd(dev); err != nil {
			return err
		}
		return netlink.LinkSetUp(dev)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.AddAddr(ns, dev.Name, netip.MustParsePrefix("10.254.7.1/24")); err != nil {
		t.Fatal(err)
	}
	if err := j.AddAddr(ns, dev.Name, netip.MustParsePrefix("fd00:254:7::1/64")); err != nil {
		t.Fatal(err)
	}
	if err := j.AddRoute(ns, Route{Dst: netip.MustParsePrefix("10.254.8.0/24"), Dev: dev.Name, Table: 100}); err != nil {
		t.Fatal(err)
	}
	if err := j.AddRule(ns, Rule{Family: 4, IIF: "lo", Table: 100, Priority: 1234}); err != nil {
		t.Fatal(err)
	}
	if err := j.AddRule(ns, Rule{Family: 6, IIF: "lo", Table: 100, Priority: 1234}); err != nil {
		t.Fatal(err)
	}
	if err := j.SetSysctl(ns, "net/ipv4/ip_forward", "1"); err != nil {
		t.Fatal(err)
	}
	if v, _ := ReadSysctl(ns, "net/ipv4/ip_forward"); v != "1" {
		t.Errorf("ip_forward in %s = %q, want 1", ns, v)
	}
	hostFwd, _ := ReadSysctl("", "net/ipv4/ip_forward")
	if err := j.SetSysctl(ns, "net/ipv4/ip_forward", "1"); err != nil {
		t.Fatal(err)
	}

	saved, err := LoadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if len(saved) != 8 {
		t.Errorf("state file holds %d entries, want 8: %v", len(saved), saved)
	}

	err = Do(ns, func() error {
		l, err := netlink.LinkByName(dev.Name)
		if err != nil {
			return err
		}
		if l.Attrs().MTU != 1400 {
			t.Errorf("mtu %d, want 1400", l.Attrs().MTU)
		}
		rules, err := netlink.RuleList(netlink.FAMILY_ALL)
		if err != nil {
			return err
		}
		n := 0
		for _, r := range rules {
			if r.Priority == 1234 {
				n++
			}
		}
		if n != 2 {
			t.Errorf("%d rules at priority 1234, want 2", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := ReadSysctl("", "net/ipv4/ip_forward"); v != hostFwd {
		t.Errorf("host ip_forward changed to %q", v)
	}
	if _, err := netlink.LinkByName(dev.Name); err == nil {
		t.Errorf("device %s visible in the host namespace", dev.Name)
	}

	if err := j.Undo(); err != nil {
		t.Fatalf("undo: %v", err)
	}
	if NamespaceExists(ns) {
		t.Errorf("namespace %s left behind", ns)
	}
	if saved, _ := LoadFile(state); len(saved) != 0 {
		t.Errorf("state file still holds %v", saved)
	}
}

func TestUndoSysctlAndRulesInHostStyleNamespace(t *testing.T) {
	roottest.Need(t)
	ns := roottest.Name("p2t")
	outer := NewJournal(nil)
	t.Cleanup(func() { outer.Undo() })
	if err := outer.NewNamespace(ns); err != nil {
		t.Fatal(err)
	}
	// A second journal changes things inside; a third process would read
	// its entries from the state file: undo them from the list alone.
	j := NewJournal(nil)
	if err := j.SetSysctl(ns, "net/ipv4/conf/all/rp_filter", "2"); err != nil {
		t.Fatal(err)
	}
	if err := j.AddRule(ns, Rule{Family: 4, IIF: "lo", Table: 77, Priority: 777}); err != nil {
		t.Fatal(err)
	}
	before, _ := ReadSysctl(ns, "net/ipv4/conf/all/rp_filter")
	if before != "2" {
		t.Fatalf("rp_filter = %q, want 2", before)
	}
	if err := UndoEntries(j.Entries()); err != nil {
		t.Fatal(err)
	}
	if v, _ := ReadSysctl(ns, "net/ipv4/conf/all/rp_filter"); v == "2" {
		t.Errorf("rp_filter not restored")
	}
	// Undoing twice finds everything gone, which is not an error.
	if err := UndoEntries(j.Entries()); err != nil {
		t.Errorf("second undo: %v", err)
	}
}

func TestUndoKeepsWhatFailedOnRecord(t *testing.T) {
	var saved [][]Entry
	j := NewJournal(func(es []Entry) error { saved = append(saved, es); return nil })
	bad := Entry{Kind: "no-such-kind", Name: "x"}
	gone := Entry{Kind: KindNetns, Name: "p2t-never-made"}
	for _, e := range []Entry{bad, gone} {
		if _, err := j.record(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Undo(); err == nil {
		t.Fatal("undoing an unknown kind of change succeeded")
	}
	if got := j.Entries(); !reflect.DeepEqual(got, []Entry{bad}) {
		t.Errorf("after undo the journal holds %v, want only the failed %v", got, bad)
	}
	// Saved after each step: first without the undone entry.
	if last := saved[len(saved)-1]; !reflect.DeepEqual(last, []Entry{bad}) {
		t.Errorf("last saved state %v, want %v", last, []Entry{bad})
	}
}
