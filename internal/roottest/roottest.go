// Package roottest marks the tests that need root and network namespaces,
// so `make test` can count how many of them ran and refuse a CI run in
// which one of them skipped.
package roottest

import (
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"testing"
)

// Marker is logged by every root test that runs, and starts the skip
// message of every one that does not; internal/testsum counts both.
const Marker = "pi2hop-root-test"

// InCI reports whether the tests run in CI (CI=true), where a root test
// must run: a missing tool is then a failure, not a skip.
func InCI() bool { return os.Getenv("CI") == "true" }

// Need skips t unless it runs as root without -short, and fails it (in CI)
// or skips it (elsewhere) when one of tools is not on PATH.
func Need(t testing.TB, tools ...string) {
	t.Helper()
	switch {
	case testing.Short():
		t.Skip(Marker + ": skipped with -short")
	case os.Geteuid() != 0:
		t.Skip(Marker + ": needs root and network namespaces")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if InCI() {
				t.Fatalf("%s: needs %s, which make test installs when run as root: %v", Marker, tool, err)
			}
			t.Skipf("%s: needs %s (make test as root installs it)", Marker, tool)
		}
	}
	t.Log(Marker)
}

var names atomic.Uint32

// Name returns a short name for a namespace or device: prefix, the
// process id modulo 10000 and a counter, so tests running at once, in
// this process or in others, never share one, and the name with a few
// letters added still fits a device name's 15 bytes.
func Name(prefix string) string {
	return fmt.Sprintf("%s%d%d", prefix, os.Getpid()%10000, names.Add(1))
}

// Control runs f on c's socket, to set an option the test needs, and fails
// t if it or the socket does.
func Control(t testing.TB, c syscall.Conn, f func(fd int) error) {
	t.Helper()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var ferr error
	if err := raw.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil || ferr != nil {
		t.Fatalf("socket option: %v %v", err, ferr)
	}
}
