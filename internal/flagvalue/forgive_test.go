package flagvalue

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func forgiveFlags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("web", "", "")
	fs.Lookup("web").NoOptDefVal = "127.0.0.1:8080"
	fs.String("metrics", "", "")
	fs.Bool("nat", false, "")
	fs.Var(&Rate{}, "rate", "")
	fs.Var(&Rate{}, "up-rate", "")
	fs.Var(&Size{Max: 1 << 30}, "memlimit", "")
	return fs
}

// An optional-value flag followed by a separate word that reads as its
// value, and is no command, gets the spelling that works; a command, a
// flag, "--", a word of another shape and a required-value flag do not.
func TestBareValue(t *testing.T) {
	isCommand := func(w string) bool { return w == "true" || w == "ping" }
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--web", "127.0.0.1:8080", "--", "true"}, "--web 127.0.0.1:8080: did you mean --web=127.0.0.1:8080?"},
		{[]string{"--web", ":9000"}, "did you mean --web=:9000?"},
		{[]string{"--web", "[::1]:8080", "true"}, "did you mean --web=[::1]:8080?"},
		{[]string{"--web=127.0.0.1:8080", "--", "true"}, ""},
		{[]string{"--web", "--", "127.0.0.1:8080"}, ""}, // after --, the command's own
		{[]string{"--web", "ping", "localhost:80"}, ""},
		{[]string{"--web", "--nat", "127.0.0.1:80"}, ""},
		{[]string{"--web", "true"}, ""},
		{[]string{"--web", "./myapp"}, ""},
		{[]string{"--metrics", "127.0.0.1:9101"}, ""},
		{[]string{"--nat", "true"}, ""},
	} {
		fs := forgiveFlags()
		if err := fs.Parse(tt.args); err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		err := BareValue(fs, tt.args, isCommand)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: %v, want no error", tt.args, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%q: %v, want %q", tt.args, err, tt.want)
		}
	}
}

// A rate in tc's byte units gets a warning naming both readings, worked
// out by hand: 10 MB/s is 80 Mbit/s.
func TestByteRateWarnings(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"--rate", "10mbps"}, []string{"--rate 10mbps is 80 Mbit/s (tc: bytes per second); write 10mbit for 10 Mbit/s"}},
		{[]string{"--rate=10MBps"}, []string{"--rate 10MBps is 80 Mbit/s (tc: bytes per second); write 10mbit for 10 Mbit/s"}},
		{[]string{"--up-rate", "1.5Gbps", "--rate", "500kbps"}, []string{
			"--up-rate 1.5Gbps is 12 Gbit/s (tc: bytes per second); write 1.5gbit for 1.5 Gbit/s",
			"--rate 500kbps is 4 Mbit/s (tc: bytes per second); write 500kbit for 500 kbit/s"}},
		{[]string{"--rate", "100bps"}, []string{"--rate 100bps is 800 bit/s (tc: bytes per second); write 100bit for 100 bit/s"}},
		{[]string{"--rate", "10mbit"}, nil},
		{[]string{"--memlimit", "1mb"}, nil},
		{[]string{"--rate", "10mbit", "--", "--rate", "10mbps"}, nil},
	} {
		fs := forgiveFlags()
		if err := fs.Parse(tt.args); err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		got := ByteRateWarnings(fs, tt.args)
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%q:\n got %q\nwant %q", tt.args, got, tt.want)
		}
	}
}
