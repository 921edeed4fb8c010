package netsys

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pi2hop/pi2hop/internal/roottest"
)

// TestNamespaceSurvivesIPNetnsAdd: a namespace made while /run/netns is
// not yet a mount point must still be removable after ip-netns(8) has
// made its own (it bind-mounts the folder onto itself when it finds none).
// Run in a private mount namespace with a fresh /run, so the machine's
// own /run/netns is neither needed nor touched.
func TestNamespaceSurvivesIPNetnsAdd(t *testing.T) {
	roottest.Need(t, "unshare", "ip")
	if os.Getenv("PI2HOP_NETNS_CHILD") == "1" {
		netnsChild(t)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
		`mount -t tmpfs pi2hop-test /run && exec "$0" -test.run '^TestNamespaceSurvivesIPNetnsAdd$' -test.v`, exe)
	cmd.Env = append(os.Environ(), "PI2HOP_NETNS_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("child:\n%s", out)
}

func netnsChild(t *testing.T) {
	ours, theirs := roottest.Name("p2t"), roottest.Name("p2t")+"x"
	if err := NewNamespace(ours); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ip", "netns", "add", theirs).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v\n%s", err, out)
	}
	defer exec.Command("ip", "netns", "del", theirs).Run()
	if err := DeleteNamespace(ours); err != nil {
		t.Fatalf("delete after ip netns add: %v", err)
	}
	if _, err := os.Stat(filepath.Join(NetnsDir, ours)); !os.IsNotExist(err) {
		t.Fatalf("%s still there: %v", ours, err)
	}
}
