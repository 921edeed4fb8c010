package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// --config stands for flags given before the others: a flag on the
// command line wins over the file's, as over a profile's (--rate over
// the file's up-rate, --aqm over its queue knobs), and the file's values
// win over --profile's.
func TestConfigOverrideOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lab.toml")
	file := "rate = \"20mbit\"\nup-rate = \"5mbit\"\ndelay = \"10ms\"\naqm = \"codel\"\ntarget = \"4ms\"\nname = \"fromfile\"\nweb = \"127.0.0.1:8088\"\n"
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string // the settings in force, as JSON
		name string
		err  string
	}{
		{args: nil, name: "fromfile",
			want: `{"rate":20000000,"up-rate":5000000,"delay":10000000,"aqm":"codel","target":4000000}`},
		{args: []string{"--rate", "30mbit", "--name", "cli"}, name: "cli",
			want: `{"rate":30000000,"delay":10000000,"aqm":"codel","target":4000000}`},
		{args: []string{"--aqm", "dualpi2", "--delay", "2ms"}, name: "fromfile",
			want: `{"rate":20000000,"up-rate":5000000,"delay":2000000,"aqm":"dualpi2"}`},
		// The profile's delay (20ms) and rate traces give way to the
		// file's; its jitter stays.
		{args: []string{"--profile", "lte"}, name: "fromfile",
			want: `{"rate":20000000,"up-rate":5000000,"delay":10000000,"jitter":{"amount":4000000},"aqm":"codel","target":4000000}`},
	} {
		fs := pflag.NewFlagSet("shell", pflag.ContinueOnError)
		inst := addInstanceFlags(fs)
		link := addLinkFlags(fs, true)
		link.addProfileFlag()
		if err := fs.Parse(append([]string{"--config", path}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		if err := link.applyConfig(); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		s, err := link.resolved()
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		b, _ := json.Marshal(s)
		if string(b) != tc.want || inst.name != tc.name || inst.web != "127.0.0.1:8088" {
			t.Errorf("%v: settings %s, name %q, web %q; want %s, name %q", tc.args, b, inst.name, inst.web, tc.want, tc.name)
		}
	}

	// A key the command has no flag for, and a bad command flag's value,
	// are named by file and line.
	for _, tc := range []struct{ data, err string }{
		{"rate = \"5mbit\"\nnat = true\n", "lab.toml:2: nat: no such setting"},
		{"profile = \"lt\"\n", "lab.toml:1: profile = \"lt\""},
	} {
		if err := os.WriteFile(path, []byte(tc.data), 0o600); err != nil {
			t.Fatal(err)
		}
		fs := pflag.NewFlagSet("shell", pflag.ContinueOnError)
		addInstanceFlags(fs)
		link := addLinkFlags(fs, true)
		link.addProfileFlag()
		if err := fs.Parse([]string{"--config", path}); err != nil {
			t.Fatal(err)
		}
		if err := link.applyConfig(); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: %v, want an error containing %q", tc.data, err, tc.err)
		}
	}
}
