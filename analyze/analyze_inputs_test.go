package analyze

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Analyze checks every path before reading any: a missing file or a
// directory fails by name, even after a good input.
func TestAnalyzeChecksPathsFirst(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pcap")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		paths []string
		want  string
	}{
		{[]string{filepath.Join(dir, "missing.pcap")}, "missing.pcap: no such file"},
		{[]string{dir}, dir + " is a directory, not a capture file"},
		{[]string{empty, filepath.Join(dir, "nope")}, "nope: no such file"}, // empty.pcap is not read first
	}
	for _, tc := range tests {
		var in []Input
		for _, p := range tc.paths {
			in = append(in, Input{Path: p})
		}
		_, err := Analyze(in, Options{})
		if err == nil || !strings.HasSuffix(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error ending %q", tc.paths, err, tc.want)
		}
	}
}

// Inputs puts the ingress captures first, then the self-describing ones,
// then the egress captures, each with its role.
func TestInputs(t *testing.T) {
	got := Inputs([]string{"a.pcap", "b.pcap"}, []string{"hop.pcapng"}, []string{"c.pcap"})
	want := []Input{{Path: "a.pcap", Role: "in"}, {Path: "b.pcap", Role: "in"}, {Path: "hop.pcapng"}, {Path: "c.pcap", Role: "out"}}
	if !slices.Equal(got, want) {
		t.Errorf("Inputs = %+v, want %+v", got, want)
	}
}
