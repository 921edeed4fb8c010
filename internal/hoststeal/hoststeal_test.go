package hoststeal

import (
	"testing"
	"time"
)

// TestParse reads the 8th CPU-time figure of /proc/stat's cpu line
// in USER_HZ (10 ms) ticks (proc(5)), and nothing from other lines.
func TestParse(t *testing.T) {
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
		if got := parse([]byte(tt.line)); got != tt.want {
			t.Errorf("parse(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
	if Total() < 0 {
		t.Error("Total: /proc/stat gave no steal figure on this Linux machine")
	}
}
