package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/internal/privs"
	"github.com/pi2hop/pi2hop/internal/roottest"
)

// systemdDir holds the units of deploy/systemd.
const systemdDir = "../../deploy/systemd"

// systemdBin is where the units run pi2hop from.
const systemdBin = "/usr/local/bin/pi2hop"

// unitCommands are the pi2hop command of each unit and the capabilities
// its code needs (beyond them the bounding set is checked by hand, in
// docs/systemd.md).
var unitCommands = map[string]struct {
	command string
	caps    []privs.Cap
}{
	"pi2hop-run@.service":   {"run", []privs.Cap{privs.NetAdmin, privs.SysAdmin, privs.SysNice}},
	"pi2hop-share@.service": {"share", []privs.Cap{privs.NetAdmin, privs.SysAdmin, privs.SysNice}},
}

// unitDirectives reads a unit file's Key=Value lines (repeated keys
// joined by a newline).
func unitDirectives(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, "=")
		if !ok || strings.HasPrefix(l, "#") {
			continue
		}
		if d[k] != "" {
			v = d[k] + "\n" + v
		}
		d[k] = v
	}
	return d
}

// TestSystemdUnitCommands: each unit runs its command with flags that
// command takes (the arguments from the environment file stand in as
// --lan and --wan), cleans up after itself under its own name, keeps the
// capabilities the code asks for, and gives it the folder its state
// lives in.
func TestSystemdUnitCommands(t *testing.T) {
	for unit, want := range unitCommands {
		d := unitDirectives(t, filepath.Join(systemdDir, unit))
		for _, key := range []string{"ExecStart", "ExecStopPost"} {
			words := strings.Fields(d[key])
			if len(words) < 2 || words[0] != systemdBin || words[1] != want.command {
				t.Errorf("%s: %s=%s: want %s %s ...", unit, key, d[key], systemdBin, want.command)
				continue
			}
			var args []string
			for _, w := range words[2:] {
				switch w {
				case "%i":
					args = append(args, "svc1")
				case "$PI2HOP_ARGS":
					args = append(args, "--lan", "eth1", "--wan", "eth0", "--rate", "10mbit")
				default:
					args = append(args, w)
				}
			}
			fs, _ := app.Declare(topCommand(want.command))
			if err := fs.Parse(args); err != nil {
				t.Errorf("%s: %s: pi2hop %s %q: %v", unit, key, want.command, args, err)
			}
			if name, _ := fs.GetString("name"); name != "svc1" {
				t.Errorf("%s: %s: --name %q, want the instance name", unit, key, name)
			}
			if c, _ := fs.GetBool("cleanup"); c != (key == "ExecStopPost") {
				t.Errorf("%s: %s: --cleanup %v", unit, key, c)
			}
		}
		bound := strings.Fields(d["CapabilityBoundingSet"])
		for _, c := range want.caps {
			if !slices.Contains(bound, c.String()) {
				t.Errorf("%s: CapabilityBoundingSet %v lacks %v, which %s needs", unit, bound, c, want.command)
			}
		}
		if d["RuntimeDirectory"] != filepath.Base(instance.RunDir) || d["RuntimeDirectoryMode"] != "0700" || d["RuntimeDirectoryPreserve"] != "yes" {
			t.Errorf("%s: runtime directory %q mode %q preserve %q: want %s, 0700 (as pi2hop checks it), kept for the other instances",
				unit, d["RuntimeDirectory"], d["RuntimeDirectoryMode"], d["RuntimeDirectoryPreserve"], instance.RunDir)
		}
		if !strings.Contains(d["DeviceAllow"], "/dev/net/tun rw") || d["ProtectKernelTunables"] == "yes" {
			t.Errorf("%s: want /dev/net/tun allowed and /proc/sys writable (forwarding, rp_filter)", unit)
		}
	}
}

// TestSystemdUnitsVerify: systemd-analyze verify finds nothing to say
// about either unit (run against a copy that starts the test's binary,
// as verify wants the command to exist), and each capability named is
// one systemd knows.
func TestSystemdUnitsVerify(t *testing.T) {
	roottest.Need(t, "systemd-analyze")
	bin := buildPi2hop(t)
	known, err := exec.Command("systemd-analyze", "capability").Output()
	if err != nil {
		t.Fatalf("systemd-analyze capability: %v", err)
	}
	dir := t.TempDir()
	for unit := range unitCommands {
		b, err := os.ReadFile(filepath.Join(systemdDir, unit))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, unit)
		if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(b), systemdBin, bin)), 0o644); err != nil {
			t.Fatal(err)
		}
		inst := strings.Replace(path, "@.", "@svc1.", 1)
		out, err := exec.Command("systemd-analyze", "verify", inst).CombinedOutput()
		var said []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "pi2hop") {
				said = append(said, l)
			}
		}
		if err != nil || len(said) > 0 {
			t.Errorf("systemd-analyze verify %s: %v\n%s", unit, err, strings.Join(said, "\n"))
		}
		for _, c := range strings.Fields(unitDirectives(t, path)["CapabilityBoundingSet"]) {
			if !strings.Contains(string(known), "\n"+strings.ToLower(c)+" ") {
				t.Errorf("%s: capability %s: systemd does not know it", unit, c)
			}
		}
	}
}
