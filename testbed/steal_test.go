package testbed

import (
	"testing"
	"time"
)

// TestParseSteal reads the 8th CPU-time figure of /proc/stat's cpu line
// in USER_HZ (10 ms) ticks (proc(5)), and nothing from other lines.
func TestParseSteal(t *testing.T) {
	for _, tt := range []struct {
		line string
		want time.Duration
	}{
		{"cpu  978844 0 647365 3008593 8639 0 23015 25907 0 0", 259070 * time.Millisecond},
		{"cpu  1 2 3 4 5 6 7 0 0 0", 0},
		{"cpu  1 2 3 4 5 6 7 12", 120 * time.Millisecond},
		{"cpu  1 2 3 4 5 6 7", -1},        // no steal figure
		{"cpu0 1 2 3 4 5 6 7 12 0 0", -1}, // one CPU's line, not the total
		{"cpu  1 2 3 4 5 6 7 x 0 0", -1},
		{"", -1},
	} {
		if got := parseSteal([]byte(tt.line)); got != tt.want {
			t.Errorf("parseSteal(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
	if hostSteal() < 0 {
		t.Error("hostSteal: /proc/stat gave no steal figure on this Linux machine")
	}
}
