package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A shell's start-up message: in text, a few lines a person reads (what
// runs, both sides' addresses, how to see stats and stop) and no
// key=value record; with --log-format json, the record with every field
// as one JSON object and no human lines.
func TestShellStartupMessage(t *testing.T) {
	needRoot(t)
	t.Parallel()
	for i, format := range []string{"text", "json"} {
		name := testInstance(73 + i)
		t.Cleanup(func() { cleanupInstance(name, nil, &bytes.Buffer{}) })
		var stdout, stderr bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := Run(ctx, []string{"shell", "--name", name, "--log-format", format, "--rate", "20mbit", "--down-delay", "5ms", "--floor-probe=false", "--", "/bin/true"},
			strings.NewReader(""), &stdout, &stderr)
		cancel()
		if err != nil {
			t.Fatalf("%s: shell: %v; stderr:\n%s", format, err, stderr.String())
		}
		out := stderr.String()
		switch format {
		case "text":
			for _, want := range []string{
				"pi2hop shell \"" + name + "\": dualpi2\n  up:   20mbit\n  down: 20mbit, delay 5ms\nshell side ",
				"\nthe command reaches this host at 10.254.",
				": $PI2HOP_HOST, $PI2HOP_HOST6\n",
				"\nstats: pi2hop stats --name " + name + "   stop: the command ends (or Ctrl-C)\n",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("text: %q not in stderr:\n%s", want, out)
				}
			}
			if strings.Contains(out, "pi2hop running") || strings.Contains(out, "host_addr=") {
				t.Errorf("text: the key=value record is printed without -v:\n%s", out)
			}
		case "json":
			var rec map[string]any
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Errorf("json: a line that is not JSON: %q", line)
					continue
				}
				if m["msg"] == "pi2hop running: shell" {
					rec = m
				}
			}
			if rec == nil || rec["host_addr"] == nil || rec["addr"] == nil || rec["instance"] != name {
				t.Errorf("json: start-up record %v, want one with host_addr, addr and instance %q", rec, name)
			}
		}
		checkGone(t, name)
	}
}

// The start-up lines name what a profile and the flags put in force:
// the profile, its jitter, the ECN fault, the capture file and the live
// view's address.
func TestShellStartupNamesProfileFaultCaptureWeb(t *testing.T) {
	needRoot(t) // not parallel: stats without --name in parallel tests needs their instance alone
	name := testInstance(150)
	t.Cleanup(func() { cleanupInstance(name, nil, &bytes.Buffer{}) })
	capFile := filepath.Join(t.TempDir(), "c.pcapng")
	var stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	err := Run(ctx, []string{"shell", "--name", name, "--profile", "lte", "--ecn-fault", "bleach", "--capture", capFile,
		"--web=127.0.0.1:0", "--floor-probe=false", "--", "/bin/true"}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	cancel()
	if err != nil {
		t.Fatalf("shell: %v; stderr:\n%s", err, stderr.String())
	}
	out := stderr.String()
	for _, want := range []string{
		"pi2hop shell \"" + name + "\": profile lte, dualpi2\n",
		"  up:   rate trace builtin:lte-up, delay 20ms, jitter 4ms uniform, ECN fault bleach before the queue\n",
		"  down: rate trace builtin:lte-down, delay 20ms, jitter 4ms uniform, ECN fault bleach before the queue\n",
		"\ncapture: " + capFile + "\n",
		"\nlive view: http://127.0.0.1:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("%q not in the start-up lines:\n%s", want, out)
		}
	}
	checkGone(t, name)
}

// readmeShellExample is the README's shell example that reaches this host
// by $PI2HOP_HOST, as a user copies it.
func readmeShellExample(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "sudo ./bin/pi2hop shell ") && strings.Contains(line, "$PI2HOP_HOST") {
			return line
		}
	}
	t.Fatal("README.md has no shell example that uses $PI2HOP_HOST")
	return ""
}

// The README's shell example, run by a shell as the user types it (only
// the binary's path and a test instance name put in), pings this host
// through the hop: the quoting keeps $PI2HOP_HOST for the command.
func TestReadmeShellExamplePings(t *testing.T) {
	needRoot(t, "ping") // not parallel: as above
	line := readmeShellExample(t)
	name := testInstance(151)
	t.Cleanup(func() { cleanupInstance(name, nil, &bytes.Buffer{}) })
	cmdline := strings.Replace(line, "sudo ./bin/pi2hop shell ", buildPi2hop(t)+" shell --name "+name+" --floor-probe=false ", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/bin/sh", "-c", cmdline).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmdline, err, out)
	}
	if !strings.Contains(string(out), "5 packets transmitted, 5 received") {
		t.Errorf("%s: no 5 of 5 replies:\n%s", cmdline, out)
	}
	checkGone(t, name)
}

// shell --cleanup with nothing to clean says so for the shell, and
// nothing of the gateway's policy rules (run's and share's).
func TestShellCleanupNothingLeft(t *testing.T) {
	needRoot(t)
	name := testInstance(152)
	var out bytes.Buffer
	if err := Run(context.Background(), []string{"shell", "--cleanup", "--name", name}, strings.NewReader(""), &out, &out); err != nil {
		t.Fatalf("shell --cleanup: %v\n%s", err, out.String())
	}
	if want := "shell --cleanup --name " + name + ": no instance of that name recorded"; !strings.Contains(out.String(), want) ||
		strings.Contains(out.String(), "pref") || strings.Contains(out.String(), "policy") {
		t.Errorf("shell --cleanup said:\n%s\nwant %q and nothing of policy rules", out.String(), want)
	}
}
