package main

import (
	"errors"
	"strings"
	"testing"
)

// share's own flags: bad input is a usage error that names the flag and
// what is accepted, caught before anything is set up (no root needed).
func TestShareBadInput(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"share"}, "give both --lan IF and --wan IF"},
		{[]string{"share", "--lan", "eth1"}, "give both --lan IF and --wan IF"},
		{[]string{"share", "--lan", "eth1", "--wan", "eth1"}, `--lan and --wan are both "eth1"`},
		{[]string{"share", "--lan", "eth1", "--wan", "eth0", "extra"}, `unexpected argument "extra"`},
		{[]string{"share", "--lan", "eth1", "--wan", "eth0", "--subnet", "fd00::/64"}, `--subnet "fd00::/64": want an IPv4 prefix`},
		{[]string{"share", "--lan", "eth1", "--wan", "eth0", "--subnet", "192.168.2.1"}, `--subnet "192.168.2.1": want an IPv4 prefix`},
		{[]string{"share", "--lan", "eth1", "--wan", "eth0", "--dns", "resolver"}, `--dns "resolver": want an IP address`},
		{[]string{"share", "--lan", "eth1", "--wan", "eth0", "--lease-time", "5s"}, `--lease-time "5s": must be at least 10s`},
		{[]string{"share", "--lan", "eth1", "--wan", "eth0", "--rate", "0"}, `--rate "0"`},
	} {
		_, _, err := runOut(tt.args...)
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want a usage error saying %q", tt.args, err, tt.want)
		}
	}
}

func TestParseDNSAddr(t *testing.T) {
	for in, want := range map[string]string{
		"1.1.1.1":               "1.1.1.1:53",
		"10.0.0.1:5353":         "10.0.0.1:5353",
		"2606:4700::1111":       "[2606:4700::1111]:53",
		"[2606:4700::1111]:853": "[2606:4700::1111]:853",
	} {
		if got, err := parseDNSAddr(in); err != nil || got.String() != want {
			t.Errorf("parseDNSAddr(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "dns.google", "1.1.1.1:", "[::1]"} {
		if got, err := parseDNSAddr(in); err == nil {
			t.Errorf("parseDNSAddr(%q) = %v, want an error", in, got)
		}
	}
}
