package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// testBin is the pi2hop binary that the tests which run it as a process
// share: built once per test process, not once per test.
var testBin struct {
	once sync.Once
	dir  string
	path string
	err  error
	out  []byte
}

// buildPi2hop returns the path of this package built as a binary. The
// first call builds it; a build failure fails every test that asks.
func buildPi2hop(t testing.TB) string {
	t.Helper()
	testBin.once.Do(func() {
		if testBin.dir, testBin.err = os.MkdirTemp("", "pi2hop-testbin-"); testBin.err != nil {
			return
		}
		testBin.path = filepath.Join(testBin.dir, "pi2hop")
		testBin.out, testBin.err = exec.Command("go", "build", "-o", testBin.path, ".").CombinedOutput()
	})
	if testBin.err != nil {
		t.Fatalf("go build: %v\n%s", testBin.err, testBin.out)
	}
	return testBin.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if testBin.dir != "" {
		os.RemoveAll(testBin.dir)
	}
	os.Exit(code)
}
