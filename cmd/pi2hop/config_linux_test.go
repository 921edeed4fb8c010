package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/invoker"
)

// TestConfigDumpRoundTrip: config dump of a running shell with settings
// off their defaults (and one changed by set since), read back by another
// shell's --config, gives the same configuration objects in stats --json.
func TestConfigDumpRoundTrip(t *testing.T) {
	needRoot(t)
	t.Parallel() // checks no timing
	bin := buildPi2hop(t)
	first, second := testInstance(170), testInstance(171)
	for _, n := range []string{first, second} {
		t.Cleanup(func() { exec.Command(bin, "shell", "--cleanup", "--name", n).Run() })
	}
	a := startIn(t, "", bin, "shell", "--name", first, "--rate", "7mbit", "--delay", "5ms", "--up-delay", "3ms",
		"--target", "10ms", "--coupling", "3", "--step-thresh", "2ms", "--classic-protection", "20", "--limit", "500",
		"--jitter", "1ms", "--ecn-fault", "bleach", "--down-ecn-fault", "ect1-to-ect0", "--", "sleep", "60")
	a.waitRunning("first shell", nil)
	if out, err := exec.Command(bin, "set", "--name", first, "--tupdate", "20ms").CombinedOutput(); err != nil {
		t.Fatalf("set --tupdate 20ms: %v\n%s", err, out)
	}
	dump, err := exec.Command(bin, "config", "dump", "--name", first).Output()
	if err != nil {
		t.Fatalf("config dump: %v\n%s", err, dump)
	}
	t.Logf("config dump:\n%s", dump)
	path := filepath.Join(t.TempDir(), "first.toml")
	if err := os.WriteFile(path, dump, 0o600); err != nil {
		t.Fatal(err)
	}
	// The file is read as the invoking user's own, as a user's would be.
	if u, err := invoker.FromEnv(); err != nil {
		t.Fatal(err)
	} else if err := os.Chown(path, int(u.UID), int(u.GID)); err != nil {
		t.Fatal(err)
	}
	b := startIn(t, "", bin, "shell", "--config", path, "--name", second, "--", "sleep", "60")
	b.waitRunning("second shell", nil)

	configs := func(name string) string {
		out, err := exec.Command(bin, "stats", "--json", "--name", name).Output()
		if err != nil {
			t.Fatalf("stats --json --name %s: %v\n%s", name, err, out)
		}
		var s struct {
			Dirs []struct {
				Config json.RawMessage `json:"config"`
			} `json:"directions"`
		}
		if err := json.Unmarshal(out, &s); err != nil || len(s.Dirs) != 2 {
			t.Fatalf("stats --json --name %s: %v\n%s", name, err, out)
		}
		return string(s.Dirs[0].Config) + "\n" + string(s.Dirs[1].Config)
	}
	want, got := configs(first), configs(second)
	for _, part := range []string{"coupling_factor 3", "tupdate 20ms", "target 10ms", "limit 500p", "\"jitter\":", "ect1-to-ect0", "bleach"} {
		if !strings.Contains(want, part) {
			t.Errorf("the first shell's configuration lacks %q, given:\n%s", part, want)
		}
	}
	if got != want {
		t.Errorf("configuration from --config:\n%s\nwant the dumped instance's:\n%s", got, want)
	}
	a.endBy("first shell", "SIGTERM")
	b.endBy("second shell", "SIGTERM")
	checkGone(t, first)
	checkGone(t, second)
	if !bytes.Contains(dump, []byte("tupdate = \"20ms\"")) {
		t.Errorf("the dump lacks the set's tupdate:\n%s", dump)
	}
}
