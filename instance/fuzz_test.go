package instance

import (
	"strings"
	"testing"
)

// Any bytes on the control socket decode into a request or an error, in
// bounded memory; a set request that PlanSet accepts resolves into a hop
// configuration that passes the hop's own validation, and one it refuses
// leaves the running settings as they were.
func FuzzControlRequest(f *testing.F) {
	// Seeds: testdata/fuzz/FuzzControlRequest.
	base := Settings{Rate: ptr(uint64(10e6))}
	cur, err := base.Resolve("fuzz")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := DecodeRequest(strings.NewReader(string(b)))
		if err != nil {
			return
		}
		if req.Op != OpSet || req.Set == nil {
			return
		}
		before := base
		_, merged, err := PlanSet(base, *req.Set, cur)
		if err != nil {
			if merged.Rate == nil || *merged.Rate != *before.Rate {
				t.Fatalf("a refused edit changed the settings: %+v", merged)
			}
			return
		}
		next, err := merged.Resolve("fuzz")
		if err != nil {
			t.Fatalf("PlanSet accepted %s but the merge does not resolve: %v", b, err)
		}
		if err := next.Validate(); err != nil {
			t.Fatalf("PlanSet accepted %s into an invalid hop config: %v", b, err)
		}
	})
}

func TestDecodeRequestBound(t *testing.T) {
	long := `{"op":"set","set":{"rate":1},"pad":"` + strings.Repeat("x", MaxRequest) + `"}`
	if _, err := DecodeRequest(strings.NewReader(long)); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("a %d-byte request: %v, want it refused as too long", len(long), err)
	}
	if req, err := DecodeRequest(strings.NewReader(`{"op":"stats"}`)); err != nil || req.Op != OpStats {
		t.Errorf("stats request: %+v, %v", req, err)
	}
}
