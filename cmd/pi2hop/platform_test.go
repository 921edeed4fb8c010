package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/internal/cli"
)

// The systems besides Linux that pi2hop builds for (make cross).
var otherSystems = []string{"darwin", "windows", "freebsd"}

// TestLinuxOnlyCommands: elsewhere than Linux each Linux-only command, and
// each of its subcommands, exits 2 with one line naming what it needs;
// on Linux none is refused, and the portable app.Commands never are.
func TestLinuxOnlyCommands(t *testing.T) {
	var linuxOnly []string
	for _, c := range app.Commands {
		if c.Linux == "" {
			continue
		}
		name, need := c.Name, c.Linux
		linuxOnly = append(linuxOnly, name)
		if err := needsLinux(c, "linux"); err != nil {
			t.Errorf("%s on linux: %v, want nil", name, err)
		}
		for _, goos := range otherSystems {
			err := needsLinux(c, goos)
			var stderr bytes.Buffer
			if code := exitCode(err, &stderr); code != 2 {
				t.Errorf("%s on %s: exit %d, want 2", name, goos, code)
			}
			want := "pi2hop " + name + ": needs Linux (" + need + ")\n"
			if stderr.String() != want {
				t.Errorf("%s on %s prints %q, want %q", name, goos, stderr.String(), want)
			}
		}
	}
	if got, want := strings.Join(linuxOnly, " "), "share run shell stats set lab"; got != want {
		t.Errorf("Linux-only commands: %s, want %s", got, want)
	}
	if c, _, _ := app.Lookup([]string{"share"}); c == nil || needsLinux(c, "darwin").Error() != "pi2hop share: needs Linux (TUN devices, netlink, nftables)" {
		t.Errorf("share on darwin does not say it needs TUN devices, netlink and nftables")
	}
	for _, args := range [][]string{{"replay"}, {"analyze"}, {"flow"}, {"flow", "prague-send"}, {"flow", "prague-recv"}, {"version"}} {
		c, rest, err := app.Lookup(args)
		if err != nil || len(rest) > 0 {
			t.Fatalf("app.Lookup(%q) = %v, %v", args, rest, err)
		}
		for _, goos := range otherSystems {
			if err := needsLinux(c, goos); err != nil {
				t.Errorf("%s on %s: %v, want it to run", c.Path(), goos, err)
			}
		}
	}
}

// TestRunElsewhere runs the dispatcher as it runs on darwin: a Linux-only
// command with valid flags stops before doing anything, exit 2, one line;
// its help and a portable command's help still print.
func TestRunElsewhere(t *testing.T) {
	defer func(g string) { app.GOOS = g }(app.GOOS)
	app.GOOS = "darwin"
	// stats, not share: were the check missing, the test would only ask
	// for an instance that is not there, not change the machine.
	_, _, err := runOut("stats", "--name", "pi2hop-no-such-instance")
	var stderr bytes.Buffer
	if code := exitCode(err, &stderr); code != 2 || stderr.String() != "pi2hop stats: needs Linux ("+topCommand("stats").Linux+")\n" {
		t.Errorf("stats on darwin: exit %d, %q", code, stderr.String())
	}
	for _, args := range [][]string{{"share", "--help"}, {"help", "share"}, {"replay", "--help"}, {"flow", "prague-send", "--help"}} {
		if out, _, err := runOut(args...); err != nil || !strings.HasPrefix(out, "Usage: pi2hop ") {
			t.Errorf("%q on darwin: %v, %.40q", args, err, out)
		}
	}
}

// linuxOnlyPackages are what only builds for Linux: TUN devices, the
// box's network state, and the libraries behind them.
var linuxOnlyPackages = []string{
	"github.com/vishvananda/netlink",
	"github.com/vishvananda/netns",
	"github.com/google/nftables",
	"github.com/songgao/water",
	"github.com/pi2hop/pi2hop/tun",
	"github.com/pi2hop/pi2hop/netsys",
	"github.com/pi2hop/pi2hop/hop",
	"github.com/pi2hop/pi2hop/lan",
	"github.com/pi2hop/pi2hop/instance",
	"github.com/pi2hop/pi2hop/topology",
	"github.com/pi2hop/pi2hop/testbed",
}

// TestPortableCommandsLinkNoLinuxPackage: what replay, analyze and flow
// run on links none of the Linux-only packages, as built for each other
// system, so they work there for what they are and not by stubs.
func TestPortableCommandsLinkNoLinuxPackage(t *testing.T) {
	pkgs := []string{"../../replay", "../../analyze", "../../flow/..."}
	for _, goos := range otherSystems {
		cmd := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...)
		cmd.Env = append(cmd.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("GOOS=%s go list -deps: %v\n%s", goos, err, stderr.Bytes())
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, bad := range linuxOnlyPackages {
				if dep == bad || strings.HasPrefix(dep, bad+"/") {
					t.Errorf("GOOS=%s: replay, analyze or flow links %s", goos, dep)
				}
			}
		}
	}
}

// needsLinux is the error c gives on goos.
func needsLinux(c *cli.Command, goos string) error {
	p := *app
	p.GOOS = goos
	return p.NeedsLinux(c)
}
