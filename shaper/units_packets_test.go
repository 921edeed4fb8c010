package shaper

import "testing"

func TestParsePackets(t *testing.T) {
	tests := []struct {
		in       string
		n        uint32
		suffixed bool
		ok       bool
	}{
		{"100", 100, false, true},
		{"100p", 100, true, true},
		{"3pkt", 3, true, true},
		{"3pkts", 3, true, true},
		{"3packet", 3, true, true},
		{"3packets", 3, true, true},
		{"4294967295", 1<<32 - 1, false, true},
		{"4294967296", 0, false, false}, // the kernel's u32
		{"p", 0, true, false},
		{"-1", 0, false, false},
		{"1.5p", 0, true, false},
		{"1ms", 0, false, false},
	}
	for _, tc := range tests {
		n, suffixed, err := ParsePackets(tc.in)
		if (err == nil) != tc.ok || (tc.ok && (n != tc.n || suffixed != tc.suffixed)) {
			t.Errorf("ParsePackets(%q) = %d, %v, %v; want %d, %v, ok %v", tc.in, n, suffixed, err, tc.n, tc.suffixed, tc.ok)
		}
	}
}
