package instance

import (
	"fmt"

	"github.com/pi2hop/pi2hop/aqm"
	"strings"
	"testing"
)

// Errors about a setting name its flag as the user typed it: the tuning
// flags given with their values, a key's flag alone, or the default.
func TestFlagError(t *testing.T) {
	tests := []struct {
		flags map[string]string
		want  string // the error's beginning
	}{
		{map[string]string{"tupdate": "10s"}, "--tupdate: 10s not in 1µs..4.294967295s"}, // netlink's u32 of ns
		{map[string]string{"max-rtt": "100s"}, "--max-rtt 1m40s: tune: "},
		{map[string]string{"max-rtt": "1ms", "typical-rtt": "500ms"}, "--max-rtt 1ms --typical-rtt 500ms: tune: "},
		{map[string]string{"max-rtt": "100s", "rate": "1mbit"}, "--max-rtt 1m40s: tune: "},
	}
	for _, tt := range tests {
		var s Settings
		for k, v := range tt.flags {
			st, _ := Lookup(k)
			if err := st.Bind(&s).Set(v); err != nil {
				t.Fatalf("%s %s: %v", k, v, err)
			}
		}
		_, err := s.Direction("")
		given := func(flag string) bool { _, ok := tt.flags[flag]; return ok }
		if got := s.FlagError(err, given); got == nil || !strings.HasPrefix(got.Error(), tt.want) {
			t.Errorf("%v: %v (from %v), want %q...", tt.flags, got, err, tt.want)
		}
	}
	// A queue's range error: the flag given, the tuning that derived the
	// value, or the default the other flags made wrong.
	ce := &aqm.ConfigError{Field: "tupdate", Value: 0, Min: 1000, Max: 1<<32 - 1, Unit: aqm.UnitNanos}
	for _, tt := range []struct {
		flags map[string]string
		want  string
	}{
		{map[string]string{"tupdate": "1ms"}, "--tupdate: " + ce.Range()},
		{map[string]string{"max-rtt": "100ms"}, "--max-rtt 100ms: tupdate derived from them: " + ce.Range()},
		{map[string]string{"rate": "1mbit"}, "--tupdate (default): " + ce.Range()},
	} {
		var s Settings
		for k, v := range tt.flags {
			st, _ := Lookup(k)
			if err := st.Bind(&s).Set(v); err != nil {
				t.Fatalf("%s %s: %v", k, v, err)
			}
		}
		given := func(flag string) bool { _, ok := tt.flags[flag]; return ok }
		if got := s.FlagError(fmt.Errorf("queue: %w", ce), given); got == nil || got.Error() != tt.want {
			t.Errorf("%v: %v, want %q", tt.flags, got, tt.want)
		}
	}
	if (Settings{}).FlagError(nil, nil) != nil {
		t.Error("no error phrased as one")
	}
}
