package instance

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/pi2hop/pi2hop/netsys"
)

// TestSlotProbesPastHolders: in a space of 3 slots, names that hash to
// the same slot get it and the next ones in turn while their holders
// live; a holder that exits or dies frees its slot; a slot the system
// refuses is skipped; the record is in each state file.
func TestSlotProbesPastHolders(t *testing.T) {
	roottest.Need(t)
	space := fmt.Sprintf("test%d", os.Getpid())
	// Three names with the same own slot in a space of 3.
	var names []string
	for i := 0; len(names) < 3; i++ {
		n := roottest.Name("p2s") + fmt.Sprint(i%10)
		if len(n) <= 12 && (len(names) == 0 || OwnSlot(n, 3) == OwnSlot(names[0], 3)) {
			names = append(names, n)
		}
	}
	own := OwnSlot(names[0], 3)
	next := func(k int) int { return (own-1+k)%3 + 1 }
	envs := map[string]*Env{}
	take := func(name string) *Env {
		t.Helper()
		c, _, err := claim(name, "test")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(StatePath(name)) })
		envs[name] = &Env{Name: name, claim: c}
		return envs[name]
	}
	slot := func(e *Env, free func(int) (bool, error)) int {
		t.Helper()
		s, err := e.Slot(space, 3, free)
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		st, err := ReadState(e.Name)
		if err != nil || st.Slots[space] != s {
			t.Errorf("%s: state file %+v, %v: want slot %d recorded", e.Name, st, err, s)
		}
		return s
	}
	a, b := take(names[0]), take(names[1])
	if got := slot(a, nil); got != own {
		t.Errorf("first name: slot %d, want its own %d", got, own)
	}
	if got := slot(b, nil); got != next(1) {
		t.Errorf("second name while the first holds %d: slot %d, want %d", own, got, next(1))
	}
	// The first exits (its state file goes): the third name gets the
	// slot back.
	os.Remove(StatePath(names[0]))
	c := take(names[2])
	if got := slot(c, nil); got != own {
		t.Errorf("third name after the first exited: slot %d, want %d", got, own)
	}
	// The second dies (its process gone, its state file left): its slot
	// is free for the first name again, whose own the system refuses.
	st, _ := ReadState(names[1])
	st.Start++ // another process now, as after the PID's reuse
	if err := WriteState(names[1], st); err != nil {
		t.Fatal(err)
	}
	a = take(names[0])
	got := slot(a, func(n int) (bool, error) { return n != own, nil })
	if got != next(1) {
		t.Errorf("first name again, its slot taken, the second's holder dead: slot %d, want %d", got, next(1))
	}
	if got, err := b.slotFrom(space+"from", 3, 2, nil); got != 2 || err != nil {
		t.Errorf("slotFrom 2 in an empty space: %d, %v; want 2", got, err)
	}
	if _, err := b.Slot(space, 1, func(int) (bool, error) { return false, nil }); err == nil {
		t.Error("a space with no free slot gave one")
	}
	if ns, err := netsys.CurrentNS(); err != nil || st.NetNS == nil || !st.NetNS.Same(ns) {
		t.Errorf("state file's namespace %v, want this process's %v (%v)", st.NetNS, ns, err)
	}
}

// TestCleanupOfAGoneNamespace: the state file of an instance whose
// namespace is gone: the cleanup changes nothing in this namespace (a
// sysctl it recorded stays as it is), removes the namespace of its own
// it made, and the state file, and says where the instance lived.
func TestCleanupOfAGoneNamespace(t *testing.T) {
	roottest.Need(t)
	name := roottest.Name("p2z")
	own := name + "-shell"
	if err := netsys.NewNamespace(own); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { netsys.DeleteNamespace(own); os.Remove(StatePath(name)) })
	const key = "net/ipv4/conf/all/accept_redirects"
	was, err := netsys.ReadSysctl("", key)
	if err != nil {
		t.Fatal(err)
	}
	other := map[string]string{"0": "1", "1": "0"}[was]
	// Inode 1 is no namespace's: the instance's is gone.
	gone := &netsys.NSID{Dev: 4, Ino: 1, Name: name + "-gone"}
	st := &State{PID: 1, Start: 1, Command: "shell", NetNS: gone, Entries: []netsys.Entry{
		{Kind: netsys.KindNetns, Name: own},
		{Kind: netsys.KindSysctl, Name: key, Old: other},
	}}
	if err := WriteState(name, st); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = Cleanup(name, nil, &out)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("lived in network namespace %q", gone.Name)) || !strings.Contains(err.Error(), "no longer exists") {
		t.Errorf("Cleanup: %v, want a refusal that says where the instance lived", err)
	}
	if v, _ := netsys.ReadSysctl("", key); v != was {
		t.Errorf("%s is %s after the cleanup, was %s: undone in the wrong namespace", key, v, was)
	}
	if netsys.NamespaceExists(own) {
		t.Errorf("the instance's own namespace %s is left", own)
	}
	if _, err := os.Stat(StatePath(name)); err == nil {
		t.Error("state file left")
	}
	t.Logf("%s%v", out.String(), err)
}
