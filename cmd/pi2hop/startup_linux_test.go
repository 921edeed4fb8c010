package main

import (
	"bytes"
	"context"
	"encoding/json"
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
				"pi2hop shell \"" + name + "\": 20mbit up/down, delay 0s up, 5ms down, dualpi2\nhost side ",
				", shell side ",
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
