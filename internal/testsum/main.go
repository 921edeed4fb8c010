// Command testsum reads `go test -json` on standard input and prints what
// plain `go test` prints (a line per package, the output of failed tests),
// then where the time went (each package's wall time, the slowest tests),
// how many root tests ran and skipped, and a closing count. It exits
// non-zero when a test or a build failed, or when CI=true and a root test
// skipped: a root test that skips in CI is a failure, not a pass.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/pi2hop/pi2hop/internal/roottest"
)

// event is one line of test2json output (go doc test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

type testKey struct{ pkg, test string }

type tally struct {
	passed, failed, skipped int
	rootRun, rootSkipped    int
	rootSkips               []string // "pkg.Test: reason"
	badPackages             []string
	packageTime             map[string]float64  // s, wall, by package
	testTime                map[testKey]float64 // s, wall, top-level tests
	output                  map[testKey]*strings.Builder
	root                    map[testKey]bool
}

func main() {
	t := newTally()
	if err := t.read(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		os.Exit(2)
	}
	os.Exit(t.close(os.Stdout, roottest.InCI()))
}

func newTally() *tally {
	return &tally{output: map[testKey]*strings.Builder{}, root: map[testKey]bool{},
		packageTime: map[string]float64{}, testTime: map[testKey]float64{}}
}

func (t *tally) read(r io.Reader, w io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(w, "%s\n", line) // build errors and the like
			continue
		}
		t.event(&e, w)
	}
	return sc.Err()
}

func (t *tally) event(e *event, w io.Writer) {
	k := testKey{e.Package, e.Test}
	switch e.Action {
	case "build-output":
		fmt.Fprint(w, e.Output)
	case "output":
		if strings.Contains(e.Output, roottest.Marker) {
			t.root[k] = true
		}
		if e.Test == "" {
			// Package-level lines: "ok", "FAIL", "--- FAIL" summaries and
			// panics outside a test. "ok"/"FAIL" are printed at pass/fail.
			if s := strings.TrimSpace(e.Output); s != "PASS" && s != "FAIL" &&
				!strings.HasPrefix(s, "ok ") && !strings.HasPrefix(s, "FAIL\t") {
				fmt.Fprint(w, e.Output)
			}
			return
		}
		b := t.output[k]
		if b == nil {
			b = &strings.Builder{}
			t.output[k] = b
		}
		b.WriteString(e.Output)
	case "pass", "fail", "skip":
		if e.Test == "" {
			t.packageDone(e, w)
			return
		}
		if !strings.Contains(e.Test, "/") {
			t.testTime[k] = e.Elapsed
		}
		t.testDone(k, e.Action, w)
	}
}

func (t *tally) testDone(k testKey, action string, w io.Writer) {
	out := t.output[k]
	delete(t.output, k)
	switch action {
	case "pass":
		t.passed++
		if t.root[k] {
			t.rootRun++
		}
	case "fail":
		t.failed++
		if t.root[k] {
			t.rootRun++
		}
		if out != nil {
			fmt.Fprint(w, out.String())
		}
	case "skip":
		t.skipped++
		if t.root[k] {
			t.rootSkipped++
			reason := ""
			if out != nil {
				reason = lastLine(out.String())
			}
			t.rootSkips = append(t.rootSkips, fmt.Sprintf("%s.%s: %s", k.pkg, k.test, reason))
		}
	}
}

func (t *tally) packageDone(e *event, w io.Writer) {
	if e.Action != "skip" {
		t.packageTime[e.Package] = e.Elapsed
	}
	switch e.Action {
	case "pass":
		fmt.Fprintf(w, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
	case "skip":
		fmt.Fprintf(w, "?   \t%s\t[no test files]\n", e.Package)
	case "fail":
		fmt.Fprintf(w, "FAIL\t%s\t%.3fs\n", e.Package, e.Elapsed)
		t.badPackages = append(t.badPackages, e.Package)
	}
}

// lastLine returns the last non-empty line of s, trimmed: a skip's reason.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// slowest is how many of the slowest tests close lists.
const slowest = 10

// times prints each package's wall time, longest first, and the slowest
// top-level tests: where the suite's time goes.
func (t *tally) times(w io.Writer) {
	if len(t.packageTime) == 0 {
		return
	}
	type row struct {
		name string
		s    float64
	}
	sorted := func(rows []row) []row {
		sort.Slice(rows, func(i, j int) bool {
			if rows[i].s != rows[j].s {
				return rows[i].s > rows[j].s
			}
			return rows[i].name < rows[j].name
		})
		return rows
	}
	var pkgs, tests []row
	total := 0.0
	for p, s := range t.packageTime {
		pkgs = append(pkgs, row{p, s})
		total += s
	}
	for k, s := range t.testTime {
		tests = append(tests, row{k.pkg + " " + k.test, s})
	}
	fmt.Fprintf(w, "wall time by package (%.1fs in all):\n", total)
	for _, r := range sorted(pkgs) {
		fmt.Fprintf(w, "  %8.1fs  %s\n", r.s, r.name)
	}
	fmt.Fprintf(w, "%d slowest tests:\n", min(slowest, len(tests)))
	for i, r := range sorted(tests) {
		if i == slowest {
			break
		}
		fmt.Fprintf(w, "  %8.1fs  %s\n", r.s, r.name)
	}
}

// close prints where the time went and the counts, and returns the exit
// status.
func (t *tally) close(w io.Writer, ci bool) int {
	t.times(w)
	sort.Strings(t.rootSkips)
	for _, s := range t.rootSkips {
		fmt.Fprintf(w, "root test skipped: %s\n", s)
	}
	fmt.Fprintf(w, "root tests: %d run, %d skipped\n", t.rootRun, t.rootSkipped)
	fmt.Fprintf(w, "tests: %d passed, %d failed, %d skipped\n", t.passed, t.failed, t.skipped)
	status := 0
	if t.failed > 0 || len(t.badPackages) > 0 {
		status = 1
	}
	if ci && t.rootSkipped > 0 {
		fmt.Fprintf(w, "FAIL: %d root tests skipped in CI (CI=true): in CI every root test must run\n", t.rootSkipped)
		status = 1
	}
	return status
}
