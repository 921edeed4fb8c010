package main

import (
	"strings"
	"testing"
)

func TestTally(t *testing.T) {
	const runRoot = `{"Action":"run","Package":"p","Test":"TestRoot"}
{"Action":"output","Package":"p","Test":"TestRoot","Output":"    roottest.go:40: pi2hop-root-test\n"}
{"Action":"pass","Package":"p","Test":"TestRoot","Elapsed":0.1}
`
	const skipRoot = `{"Action":"output","Package":"p","Test":"TestSkip","Output":"    x_test.go:9: pi2hop-root-test: needs root and network namespaces\n"}
{"Action":"skip","Package":"p","Test":"TestSkip"}
`
	const plainSkip = `{"Action":"output","Package":"p","Test":"TestShort","Output":"    x_test.go:9: long test\n"}
{"Action":"skip","Package":"p","Test":"TestShort"}
`
	const fail = `{"Action":"output","Package":"p","Test":"TestBad","Output":"    x_test.go:3: boom\n"}
{"Action":"fail","Package":"p","Test":"TestBad"}
{"Action":"fail","Package":"p","Elapsed":1}
`
	const pkgPass = `{"Action":"pass","Package":"p","Elapsed":1}
`
	for _, tc := range []struct {
		name, in   string
		ci         bool
		wantStatus int
		want       []string // substrings of the output
	}{
		{"root ran", runRoot + pkgPass, true, 0, []string{"ok  \tp", "root tests: 1 run, 0 skipped", "tests: 1 passed, 0 failed, 0 skipped"}},
		{"root skipped outside CI", runRoot + skipRoot + pkgPass, false, 0, []string{"root tests: 1 run, 1 skipped", "root test skipped: p.TestSkip: x_test.go:9: pi2hop-root-test: needs root"}},
		{"root skipped in CI", skipRoot + pkgPass, true, 1, []string{"FAIL: 1 root tests skipped in CI"}},
		{"plain skip is not a root test", plainSkip + pkgPass, true, 0, []string{"root tests: 0 run, 0 skipped", "0 failed, 1 skipped"}},
		{"failure shows its output", fail, false, 1, []string{"x_test.go:3: boom", "FAIL\tp", "0 passed, 1 failed"}},
		{"time per package and slowest tests", runRoot + pkgPass + `{"Action":"pass","Package":"q","Test":"TestSlow","Elapsed":7.5}
{"Action":"pass","Package":"q","Test":"TestSlow/sub","Elapsed":9}
{"Action":"pass","Package":"q","Elapsed":8}
`, false, 0, []string{"wall time by package (9.0s in all):\n       8.0s  q\n       1.0s  p\n", "2 slowest tests:\n       7.5s  q TestSlow\n       0.1s  p TestRoot\n"}},
		{"build errors pass through", "# p\nx.go:1: syntax error\n" + `{"Action":"fail","Package":"p","Elapsed":0}` + "\n", false, 1, []string{"x.go:1: syntax error", "FAIL\tp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ta := newTally()
			var out strings.Builder
			if err := ta.read(strings.NewReader(tc.in), &out); err != nil {
				t.Fatal(err)
			}
			status := ta.close(&out, tc.ci)
			if status != tc.wantStatus {
				t.Errorf("status %d, want %d\n%s", status, tc.wantStatus, out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}
