package privs

import (
	"strings"
	"testing"
)

func TestParseStatusAndNeed(t *testing.T) {
	tests := []struct {
		name    string
		capEff  string
		want    []Cap  // asked for
		missing string // "" = no error; else a word the error must hold
	}{
		// Root's full set on a 6.x kernel: bits 0..40.
		{"root", "000001ffffffffff", []Cap{NetAdmin, SysAdmin, SysNice}, ""},
		// NET_ADMIN alone is bit 12: 0x1000.
		{"net admin only, shell", "0000000000001000", []Cap{NetAdmin, SysAdmin}, "CAP_SYS_ADMIN"},
		{"net admin only, run", "0000000000001000", []Cap{NetAdmin}, ""},
		// Docker's default set (0xa80425fb) has neither NET_ADMIN nor SYS_ADMIN.
		{"docker default", "00000000a80425fb", []Cap{NetAdmin}, "CAP_NET_ADMIN"},
		// SYS_ADMIN bit 21 (0x200000) plus NET_ADMIN, no SYS_NICE (bit 23).
		{"no nice", "0000000000201000", []Cap{SysNice}, "CAP_SYS_NICE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseStatus("Name:\tpi2hop\nCapInh:\t0000000000000000\nCapEff:\t" + tt.capEff + "\nCapBnd:\t000001ffffffffff\n")
			if err != nil {
				t.Fatal(err)
			}
			err = s.Need("shell", "create network namespaces", tt.want...)
			switch {
			case tt.missing == "" && err != nil:
				t.Fatalf("Need = %v, want nil", err)
			case tt.missing != "" && (err == nil || !strings.Contains(err.Error(), tt.missing)):
				t.Fatalf("Need = %v, want an error naming %s", err, tt.missing)
			}
		})
	}
	if _, err := ParseStatus("Name:\tx\n"); err == nil {
		t.Error("status without CapEff: no error")
	}
	if _, err := ParseStatus("CapEff:\tzz\n"); err == nil {
		t.Error("CapEff zz: no error")
	}
	if !(Set{}).Has(SysAdmin) {
		t.Error("an unknown set refuses")
	}
}

func TestNeedLine(t *testing.T) {
	s := Set{Eff: 1 << NetAdmin, Known: true}
	got := s.Need("shell", "create network namespaces", NetAdmin, SysAdmin).Error()
	want := "shell needs CAP_SYS_ADMIN to create network namespaces; run as root or add it (docker: --cap-add SYS_ADMIN)"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}
