package netsys

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/internal/roottest"
)

// TestFindNS: the process's own namespace is "" (no setns needed); a
// named one is found by its name, and not once the name is gone; one
// without a name (a container's) through a process living in it, and not
// when none does.
func TestFindNS(t *testing.T) {
	roottest.Need(t, "ip", "sleep")
	if p, ok := FindNS(mustCurrent(t)); p != "" || !ok {
		t.Errorf("FindNS(this process's namespace) = %q, %v; want \"\", true", p, ok)
	}
	name := roottest.Name("p2n")
	if err := NewNamespace(name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { DeleteNamespace(name) })
	named, err := statNS(filepath.Join(NetnsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	named.Name = name
	if p, ok := FindNS(named); p != name || !ok {
		t.Errorf("FindNS(%v) = %q, %v; want its name", named, p, ok)
	}
	sleeper := exec.Command("ip", "netns", "exec", name, "sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	// ip netns exec enters the namespace, then runs sleep.
	in := fmt.Sprintf("/proc/%d/ns/net", sleeper.Process.Pid)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if o, err := statNS(in); err == nil && o.Same(named) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("ip netns exec's sleep did not enter the namespace within 5 s")
		}
	}
	if err := DeleteNamespace(name); err != nil {
		t.Fatal(err)
	}
	if p, ok := FindNS(named); ok {
		t.Errorf("FindNS(%v) after its name went: %q, true; want not found", named, p)
	}
	unnamed := NSID{Dev: named.Dev, Ino: named.Ino}
	p, ok := FindNS(unnamed)
	if !ok || !strings.HasPrefix(p, "/proc/") {
		t.Fatalf("FindNS(%v), a process in it: %q, %v; want a /proc/PID/ns/net path", unnamed, p, ok)
	}
	err = Do(p, func() error {
		o, err := statNS("/proc/thread-self/ns/net")
		if err == nil && !o.Same(unnamed) {
			err = fmt.Errorf("ran in %v, want %v", o, unnamed)
		}
		return err
	})
	if err != nil {
		t.Errorf("Do(%s): %v", p, err)
	}
	// One no process lives in: inode 1 is no namespace's (the kernel
	// numbers them near 2^32). A freed namespace's own number would do
	// only until another test's new namespace reuses it.
	if p, ok := FindNS(NSID{Dev: named.Dev, Ino: 1}); ok {
		t.Errorf("FindNS of a namespace with no name and no process: %q, true; want not found", p)
	}
}

func mustCurrent(t *testing.T) NSID {
	t.Helper()
	id, err := CurrentNS()
	if err != nil {
		t.Fatal(err)
	}
	return id
}
