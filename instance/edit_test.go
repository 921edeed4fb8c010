package instance

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/hop"
)

// liveEdit applies set over (base, cur) as a running instance does:
// PlanSet, then the check hop.Reconfigure makes against the buffers the
// hop was built with (built).
func liveEdit(built hop.Config, base Settings, cur hop.Config, set Settings) (hop.Config, Settings, error) {
	next, merged, err := PlanSet(base, set, cur)
	if err != nil {
		return cur, base, err
	}
	if err := built.CheckLive(next); err != nil {
		return cur, base, rangeField(err, set)
	}
	return next, merged, nil
}

// editGrid is every combination of a rate and a delay edit, each alone
// and together, and a few per-direction and queue edits: the meaningless
// (1bit, 100s) beside the ordinary.
func editGrid() []Settings {
	rates := []uint64{1, 8_000, 1_000_000, 7_000_000, 10_000_000, 50_000_000, 0} // 0: unlimited
	delays := []time.Duration{0, time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, 300 * time.Millisecond, time.Second, 10 * time.Second, 100 * time.Second}
	var grid []Settings
	for _, r := range rates {
		grid = append(grid, Settings{Rate: ptr(r)}, Settings{DownRate: ptr(r)})
		for _, d := range delays {
			grid = append(grid, Settings{Rate: ptr(r), Delay: ptr(d)})
		}
	}
	for _, d := range delays {
		grid = append(grid, Settings{Delay: ptr(d)}, Settings{UpDelay: ptr(d)})
	}
	for _, l := range []uint32{100, 10000, 20000} {
		grid = append(grid, Settings{Limit: ptr(l)})
	}
	return append(grid, Settings{Target: ptr(time.Duration(0))}, Settings{Target: ptr(time.Millisecond)}, Settings{RateTrace: ptr("builtin:lte-down")})
}

func describe(s Settings) string {
	var parts []string
	for _, k := range s.Given() {
		st, _ := Lookup(k)
		parts = append(parts, k+" "+st.Bind(&s).String())
	}
	return strings.Join(parts, " ")
}

// TestLiveEditsNeverStrand: from a hop as started, whatever edit was
// accepted, every other edit accepted at the start is still accepted
// after it; a refused one names its key and the range it would accept.
func TestLiveEditsNeverStrand(t *testing.T) {
	for _, start := range []Settings{
		{},
		{Rate: ptr(uint64(100_000_000)), Delay: ptr(10 * time.Millisecond)},
		{Rate: ptr(uint64(1_000_000)), Delay: ptr(200 * time.Millisecond)},
	} {
		t.Run(describe(start), func(t *testing.T) {
			built, err := start.Resolve("grid")
			if err != nil {
				t.Fatal(err)
			}
			var accepted []Settings
			for _, e := range editGrid() {
				_, _, err := liveEdit(built, start, built, e)
				if err == nil {
					accepted = append(accepted, e)
					continue
				}
				var fe *FieldError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), "accept") && !strings.Contains(err.Error(), "carry live: rates up to") {
					t.Errorf("%s refused without its key and range: %v", describe(e), err)
				}
			}
			if len(accepted) < 10 {
				t.Fatalf("only %d edits of the grid accepted: %v", len(accepted), accepted)
			}
			for _, e1 := range accepted {
				cur, base, err := liveEdit(built, start, built, e1)
				if err != nil {
					t.Fatal(err)
				}
				for _, e2 := range accepted {
					if _, _, err := liveEdit(built, base, cur, e2); err != nil {
						t.Errorf("after %s, %s is refused: %v", describe(e1), describe(e2), err)
					}
				}
			}
			t.Logf("%d of %d edits accepted; each of %d pairs applies", len(accepted), len(editGrid()), len(accepted)*len(accepted))
		})
	}
}

// The edits of the report: rate 1bit and target 0 are refused with the
// range accepted; a delay the buffers cannot carry at the hop's rate is
// refused up front, so that a later rate edit is not stranded.
func TestSetRefusals(t *testing.T) {
	built, err := Settings{}.Resolve("x")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		set       Settings
		key, want string
	}{
		{Settings{Rate: ptr(uint64(1))}, "rate", "1bit is below 8kbit, too slow to send a 1500-byte packet within 1.5 s; accepted: 8kbit.. or unlimited"},
		{Settings{Target: ptr(time.Duration(0))}, "target", "0s is below 1us"},
		{Settings{Delay: ptr(100 * time.Second)}, "delay", "accepted: 0s..10s (--force accepts it)"},
		{Settings{Delay: ptr(time.Second)}, "delay", "delays up to 307.2ms"},
		{Settings{DownRate: ptr(uint64(50_000_000))}, "down-rate", "rates up to 10mbit"},
	} {
		_, _, err := liveEdit(built, Settings{}, built, tc.set)
		if err == nil || ErrorKey(err) != tc.key || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (key %q), want %s: ...%s", describe(tc.set), err, ErrorKey(err), tc.key, tc.want)
		}
	}
}
