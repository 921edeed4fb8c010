package testbed

import (
	"strings"
	"testing"
)

func TestNotes(t *testing.T) {
	tests := []struct {
		cfg  Config
		want []string
	}{
		{Config{Scenario: "bdp", Quick: true}, []string{"100 Mbit/s give 8.55 Mbit/s", "TCP_WINDOW_CLAMP", "first 1s"}},
		{Config{Scenario: "l4s-demo"}, []string{"100 packets tail drop (≈ 150 KB of 1500-byte packets, 120 ms", "4 kernel TCP cubic", "min_qlen_step 1"}},
		{Config{Scenario: "coexist"}, []string{"Jain's index"}},
	}
	for _, tt := range tests {
		c, err := tt.cfg.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		all := strings.Join(notes(c), "\n")
		for _, w := range tt.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s notes lack %q:\n%s", c.Scenario, w, all)
			}
		}
	}
}
