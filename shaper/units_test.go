package shaper

import (
	"strings"
	"testing"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
	}{
		{"1000000", 1_000_000},
		{"0", 0},
		{"1bit", 1},
		{"500kbit", 500_000},
		{"10mbit", 10_000_000},
		{"10Mbit", 10_000_000},
		{"1.5gbit", 1_500_000_000},
		{"100gbit", 100_000_000_000},
		{"2tbit", 2_000_000_000_000},
		{"1kibit", 1024},
		{"1mibit", 1 << 20},
		{"1gibit", 1 << 30},
		{"1tibit", 1 << 40},
		{"1bps", 8}, // tc: bps is bytes per second
		{"100kbps", 800_000},
		{"12.5mbps", 100_000_000},
		{"1gbps", 8_000_000_000},
		{"1kibps", 8 * 1024},
		{" 10mbit ", 10_000_000},
		{"0.5bit", 1}, // rounded to nearest
	}
	for _, tt := range tests {
		got, err := ParseRate(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestParseRateErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"10mb", `"10mb": unknown unit "mb" (want bit, kbit, mbit, gbit, tbit, bps, kbps, mbps, gbps, tbps (bps = bytes/s)`},
		{"", `"": empty`},
		{"mbit", `"mbit": want a non-negative number`},
		{"-5mbit", `"-5mbit": want a non-negative number`},
		{"1.2.3mbit", `"1.2.3mbit": bad number "1.2.3"`},
		{"99999999tbps", `"99999999tbps": too large`},
		{"10 mbit", `"10 mbit": unknown unit " mbit"`},
	}
	for _, tt := range tests {
		_, err := ParseRate(tt.in)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("ParseRate(%q) error = %v; want prefix %s", tt.in, err, tt.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		err  string
	}{
		{in: "1500", want: 1500},
		{in: "1500b", want: 1500},
		{in: "64k", want: 64 << 10},
		{in: "64kb", want: 64 << 10},
		{in: "32M", want: 32 << 20},
		{in: "32mb", want: 32 << 20},
		{in: "1g", want: 1 << 30},
		{in: "1gb", want: 1 << 30},
		{in: "1kbit", want: 128},
		{in: "8mbit", want: 1 << 20},
		{in: "1gbit", want: 1 << 27},
		{in: "1.5k", want: 1536},
		{in: "10kib", err: `"10kib": unknown unit "kib" (want b, k or kb (1024)`},
		{in: "k", err: `"k": want a non-negative number`},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if tt.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
				t.Errorf("ParseSize(%q) error = %v; want prefix %s", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestFormatRate(t *testing.T) {
	tests := []struct {
		in   uint64
		want string
	}{
		{0, "0bit"},
		{999, "999bit"},
		{1000, "1kbit"},
		{1234567, "1234.567kbit"},
		{10_000_000, "10mbit"},
		{1_500_000_000, "1.5gbit"},
		{100_000_000_000, "100gbit"},
	}
	for _, tt := range tests {
		got := FormatRate(tt.in)
		if got != tt.want {
			t.Errorf("FormatRate(%d) = %q; want %q", tt.in, got, tt.want)
		}
		if back, err := ParseRate(got); err != nil || back != tt.in {
			t.Errorf("ParseRate(FormatRate(%d)) = %d, %v", tt.in, back, err)
		}
	}
}
