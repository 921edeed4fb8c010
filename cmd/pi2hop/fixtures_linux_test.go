package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/instance"
)

// startInstance runs `bin args...` (run or share, as instance name) in
// namespace ns and waits, up to within, for its control socket and for
// ready in its output (stdout and stderr together; "" for none). It is
// killed when the test ends; a failed test logs its output.
func startInstance(t *testing.T, bin, ns, name string, within time.Duration, ready string, args ...string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns, bin}, args...)...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("pi2hop %s %s in %s printed:\n%s", args[0], name, ns, out)
		}
	})
	for deadline := time.Now().Add(within); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(instance.SocketPath(name)); err == nil && strings.Contains(out.String(), ready) {
			return cmd, out
		}
		if time.Now().After(deadline) {
			t.Fatalf("pi2hop %s %s in %s: no control socket and %q within %v", args[0], name, ns, ready, within)
		}
	}
}
