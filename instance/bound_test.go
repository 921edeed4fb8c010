package instance

import (
	"strings"
	"testing"
)

// TestBounds: a value no physical link or queue has is refused by the
// flag and by a Settings that carries it (a set request's JSON), with the
// range accepted; --force lifts the delay's upper bound only.
func TestBounds(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		force      bool
		want       string // "" accepted
	}{
		{"rate", "1bit", false, "accepted: 8kbit.. or unlimited"},
		{"rate", "7999bit", false, "below 8kbit"},
		{"rate", "8kbit", false, ""},
		{"rate", "unlimited", false, ""},
		{"down-rate", "1kbit", false, "accepted: 8kbit.. or unlimited"},
		{"target", "0s", false, "accepted: 1us.."},
		{"target", "1us", false, ""},
		{"delay", "10s", false, ""},
		{"delay", "100s", false, "accepted: 0s..10s (--force accepts it)"},
		{"up-delay", "11s", false, "above 10s"},
		{"delay", "100s", true, ""},
	} {
		st, ok := Lookup(tc.key)
		if !ok {
			t.Fatalf("no setting %q", tc.key)
		}
		var s Settings
		flagErr := st.Bind(&s).Set(tc.value)
		if tc.force {
			st.SetDefault(&s)
			f := true
			s.Force = &f
		}
		// The same value as JSON would carry it, past the flag's parser.
		var raw Settings
		p, err := st.value.parse(tc.value)
		if err != nil {
			t.Fatalf("%s %s does not parse: %v", tc.key, tc.value, err)
		}
		raw.Force = s.Force
		st.Bind(&raw).field.Set(p)
		_, checkErr := raw.Resolve("b")
		if tc.want == "" {
			if flagErr != nil || checkErr != nil {
				t.Errorf("%s %s: flag %v, resolve %v; want accepted", tc.key, tc.value, flagErr, checkErr)
			}
			continue
		}
		if checkErr == nil || !strings.Contains(checkErr.Error(), tc.want) || ErrorKey(checkErr) != tc.key {
			t.Errorf("%s %s resolved: %v (key %q), want %q", tc.key, tc.value, checkErr, ErrorKey(checkErr), tc.want)
		}
		if st.Bound.Forceable {
			continue // checked once every flag is read: --force may follow
		}
		if flagErr == nil || !strings.Contains(flagErr.Error(), tc.want) {
			t.Errorf("flag --%s %s: %v, want %q", tc.key, tc.value, flagErr, tc.want)
		}
	}
}
