package netsys

import (
	"path/filepath"
	"reflect"
	"testing"
)

func TestSaveAndLoadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "state.json")
	es := []Entry{{Kind: KindRule, NS: "n", Name: "eth0", Table: 7, Priority: 9, Family: 6},
		{Kind: KindSysctl, Name: "net/ipv4/ip_forward", Old: "0"}}
	if err := SaveFile(path)(es); err != nil {
		t.Fatal(err)
	}
	got, err := LoadFile(path)
	if err != nil || !reflect.DeepEqual(got, es) {
		t.Errorf("LoadFile = %v, %v; want %v", got, err, es)
	}
}

func TestEntryStrings(t *testing.T) {
	for _, tt := range []struct {
		e    Entry
		want string
	}{
		{Entry{Kind: KindRule, Name: "eth1", Table: 100, Priority: 9000, Family: 4}, "rule -4 pref 9000 iif eth1 lookup 100"},
		{Entry{Kind: KindRoute, NS: "a", Name: "tun0", Prefix: "0.0.0.0/0", Gw: "10.0.0.1"}, "route 0.0.0.0/0 via 10.0.0.1 dev tun0 table 0 in netns a"},
		{Entry{Kind: KindSysctl, Name: "net/ipv4/ip_forward", Old: "0"}, `sysctl net/ipv4/ip_forward (was "0")`},
		{Entry{Kind: KindNftTable, Name: "pi2hop-x"}, "nftables table inet pi2hop-x"},
	} {
		if got := tt.e.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestSharedKey(t *testing.T) {
	for key, want := range map[string]bool{
		"net/ipv4/ip_forward":             true,
		"net/ipv6/conf/all/forwarding":    true,
		"net/ipv4/conf/all/rp_filter":     true,
		"net/ipv4/conf/default/rp_filter": true,
		"net/ipv4/conf/p2x-up/rp_filter":  false, // the device's own
		"net/ipv6/conf/eth0/accept_ra":    false,
		"net/ipv4/tcp_ecn":                true,
	} {
		if got := sharedKey(key); got != want {
			t.Errorf("sharedKey(%q) = %v, want %v", key, got, want)
		}
	}
}
