package instance

import (
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/instance/profile"
	"github.com/pi2hop/pi2hop/shaper"
)

// dirFigures are what a profile sets in one direction: a constant rate
// (0 for a trace, named by trace), the one-way delay and the queue kind.
type dirFigures struct {
	rate  uint64
	trace bool
	delay time.Duration
	kind  string
}

// The figures of each profile as its sources give them (profile.go).
var profileFigures = map[string][2]dirFigures{ // up, down
	"docsis-ll": {{10_000_000, false, 8 * time.Millisecond, aqm.KindDOCSIS}, {50_000_000, false, 8 * time.Millisecond, aqm.KindDOCSIS}},
	"lte":       {{0, true, 20 * time.Millisecond, aqm.KindDualPI2}, {0, true, 20 * time.Millisecond, aqm.KindDualPI2}},
	"wifi":      {{200_000_000, false, 5 * time.Millisecond, aqm.KindDualPI2}, {200_000_000, false, 5 * time.Millisecond, aqm.KindDualPI2}},
	"geo-sat":   {{3_000_000, false, 300 * time.Millisecond, aqm.KindDualPI2}, {25_000_000, false, 300 * time.Millisecond, aqm.KindDualPI2}},
	"dsl":       {{1_000_000, false, 12 * time.Millisecond, aqm.KindDualPI2}, {16_000_000, false, 12 * time.Millisecond, aqm.KindDualPI2}},
	"fiber":     {{1_000_000_000, false, 4 * time.Millisecond, aqm.KindDualPI2}, {1_000_000_000, false, 4 * time.Millisecond, aqm.KindDualPI2}},
}

func checkDir(t *testing.T, what string, got shaper.Config, kind string, want dirFigures) {
	t.Helper()
	switch r := got.Rate.(type) {
	case shaper.Const:
		if want.trace || r.BitsPerSecond != want.rate {
			t.Errorf("%s: rate %d bit/s, want %d (trace %v)", what, r.BitsPerSecond, want.rate, want.trace)
		}
	case *shaper.Trace:
		if !want.trace {
			t.Errorf("%s: a rate trace, want %d bit/s", what, want.rate)
		}
	default:
		t.Errorf("%s: rate %T", what, got.Rate)
	}
	if got.Delay != int64(want.delay) {
		t.Errorf("%s: delay %v, want %v", what, time.Duration(got.Delay), want.delay)
	}
	if kind != want.kind {
		t.Errorf("%s: aqm %s, want %s", what, kind, want.kind)
	}
}

func TestProfilesResolve(t *testing.T) {
	if len(profileFigures) != len(profile.Names()) {
		t.Fatalf("profiles %v: the test knows %d", profile.Names(), len(profileFigures))
	}
	for _, name := range profile.Names() {
		s, err := ProfileSettings(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c, err := s.Resolve("p")
		if err != nil {
			t.Fatalf("%s: resolve: %v", name, err)
		}
		want := profileFigures[name]
		checkDir(t, name+" up", c.Up.Link, c.Up.Queue.Kind, want[0])
		checkDir(t, name+" down", c.Down.Link, c.Down.Queue.Kind, want[1])
		if len(s.Warnings()) > 0 {
			t.Errorf("%s: warnings %v", name, s.Warnings())
		}
	}
}

// The DOCSIS profile's queue is the spec's Low Latency queue with queue
// protection, its qdelay taken at each direction's own rate.
func TestProfileDOCSISQueue(t *testing.T) {
	s, err := ProfileSettings("docsis-ll")
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Resolve("p")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		name string
		q    aqm.Spec
		rate uint64
	}{{"up", c.Up.Queue, 10_000_000}, {"down", c.Down.Queue, 50_000_000}} {
		q := d.q.DOCSIS
		if !q.QProt.On || q.MaxTh != 1_000_000 || q.DualPI2.Target != 10_000_000 || q.DualPI2.Coupling != 2 || q.Rate != d.rate {
			t.Errorf("%s: queue protection %v, maxth %d ns, target %d ns, coupling %d, rate %d: want on, 1 ms, 10 ms, 2, %d",
				d.name, q.QProt.On, q.MaxTh, q.DualPI2.Target, q.DualPI2.Coupling, q.Rate, d.rate)
		}
	}
}

func TestProfileUnknown(t *testing.T) {
	_, err := ProfileSettings("cable")
	if err == nil {
		t.Fatal("profile cable: no error")
	}
	for _, name := range append([]string{`"cable"`}, profile.Names()...) {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
}

// A setting given wins over the profile's: a shared one in both
// directions, a per-direction one in its own; a rate and a rate trace
// replace each other; another --aqm leaves the profile's queue knobs out.
func TestWithProfile(t *testing.T) {
	mbit := func(n uint64) *uint64 { return ptr(n * 1_000_000) }
	tests := []struct {
		profile  string
		given    Settings
		up, down dirFigures
	}{
		{"geo-sat", Settings{}, dirFigures{3_000_000, false, 300 * time.Millisecond, aqm.KindDualPI2}, dirFigures{25_000_000, false, 300 * time.Millisecond, aqm.KindDualPI2}},
		{"geo-sat", Settings{Rate: mbit(10)}, dirFigures{10_000_000, false, 300 * time.Millisecond, aqm.KindDualPI2}, dirFigures{10_000_000, false, 300 * time.Millisecond, aqm.KindDualPI2}},
		{"geo-sat", Settings{UpRate: mbit(1)}, dirFigures{1_000_000, false, 300 * time.Millisecond, aqm.KindDualPI2}, dirFigures{25_000_000, false, 300 * time.Millisecond, aqm.KindDualPI2}},
		{"geo-sat", Settings{Delay: ptr(250 * time.Millisecond), DownDelay: ptr(time.Millisecond)}, dirFigures{3_000_000, false, 250 * time.Millisecond, aqm.KindDualPI2}, dirFigures{25_000_000, false, time.Millisecond, aqm.KindDualPI2}},
		{"lte", Settings{Rate: mbit(5)}, dirFigures{5_000_000, false, 20 * time.Millisecond, aqm.KindDualPI2}, dirFigures{5_000_000, false, 20 * time.Millisecond, aqm.KindDualPI2}},
		{"lte", Settings{DownRate: mbit(7)}, dirFigures{0, true, 20 * time.Millisecond, aqm.KindDualPI2}, dirFigures{7_000_000, false, 20 * time.Millisecond, aqm.KindDualPI2}},
		{"geo-sat", Settings{UpRateTrace: ptr("builtin:lte-up")}, dirFigures{0, true, 300 * time.Millisecond, aqm.KindDualPI2}, dirFigures{25_000_000, false, 300 * time.Millisecond, aqm.KindDualPI2}},
		{"docsis-ll", Settings{AQM: ptr(aqm.KindFIFO)}, dirFigures{10_000_000, false, 8 * time.Millisecond, aqm.KindFIFO}, dirFigures{50_000_000, false, 8 * time.Millisecond, aqm.KindFIFO}},
		{"docsis-ll", Settings{Rate: mbit(100), AQM: ptr(aqm.KindDualPI2)}, dirFigures{100_000_000, false, 8 * time.Millisecond, aqm.KindDualPI2}, dirFigures{100_000_000, false, 8 * time.Millisecond, aqm.KindDualPI2}},
	}
	for _, tt := range tests {
		p, err := ProfileSettings(tt.profile)
		if err != nil {
			t.Fatal(err)
		}
		what := tt.profile + " with " + strings.Join(tt.given.Given(), ",")
		c, err := WithProfile(p, tt.given).Resolve("p")
		if err != nil {
			t.Errorf("%s: %v", what, err)
			continue
		}
		checkDir(t, what+" up", c.Up.Link, c.Up.Queue.Kind, tt.up)
		checkDir(t, what+" down", c.Down.Link, c.Down.Queue.Kind, tt.down)
	}
	// dualpi2 given over docsis-ll starts from the kernel's defaults, not
	// from the profile's DOCSIS target.
	p, _ := ProfileSettings("docsis-ll")
	c, err := WithProfile(p, Settings{AQM: ptr(aqm.KindDualPI2)}).Resolve("p")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Down.Queue.DualPI2.Target; got != 15_000_000 {
		t.Errorf("docsis-ll --aqm dualpi2: target %d ns, want the kernel's 15 ms", got)
	}
	// Auto-tuning given leaves the profile's target out, without a
	// warning about it.
	s := WithProfile(p, Settings{MaxRTT: ptr(200 * time.Millisecond)})
	if w := s.Warnings(); len(w) > 0 || s.Target != nil {
		t.Errorf("docsis-ll --max-rtt 200ms: target %v, warnings %q: want neither", s.Target, w)
	}
}

// OneWay folds one direction into the shared settings: replay's single
// link.
func TestOneWay(t *testing.T) {
	p, err := ProfileSettings("lte")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"up", "down"} {
		s := p.OneWay(dir)
		if s.RateTrace == nil || *s.RateTrace != "builtin:lte-"+dir {
			t.Errorf("%s: rate trace %v, want builtin:lte-%s", dir, s.RateTrace, dir)
		}
		for _, k := range s.Given() {
			if st, _ := Lookup(k); st.Dir != "" {
				t.Errorf("%s: %s still set", dir, k)
			}
		}
	}
	g, _ := ProfileSettings("geo-sat")
	if s := g.OneWay("up"); s.Rate == nil || *s.Rate != 3_000_000 || s.Delay == nil || *s.Delay != 300*time.Millisecond {
		t.Errorf("geo-sat up: rate %v delay %v, want 3 Mbit/s, 300 ms", s.Rate, s.Delay)
	}
}

func TestBuiltinTraceErrors(t *testing.T) {
	_, err := Settings{RateTrace: ptr("builtin:5g")}.Direction("")
	if err == nil || !strings.Contains(err.Error(), "builtin:lte-down") || !strings.Contains(err.Error(), "builtin:lte-up") {
		t.Errorf("builtin:5g: %v, want an error listing the shipped traces", err)
	}
	s := Settings{RateTrace: ptr("builtin:lte-up"), UpRateTrace: ptr("x.csv")}
	s.absTraces()
	if *s.RateTrace != "builtin:lte-up" || !strings.HasPrefix(*s.UpRateTrace, "/") {
		t.Errorf("absTraces: %q, %q: want the builtin name kept, the file made absolute", *s.RateTrace, *s.UpRateTrace)
	}
}

// set --rate on a hop whose profile set both directions' rates changes
// nothing, and says so; with one direction left to it, it is quiet.
func TestShadowed(t *testing.T) {
	lte, _ := ProfileSettings("lte")
	geo, _ := ProfileSettings("geo-sat")
	tests := []struct {
		base, set Settings
		want      []string
	}{
		{lte, Settings{Rate: ptr(uint64(5_000_000))}, []string{"rate changes nothing: up-rate-trace and down-rate-trace are set"}},
		{geo, Settings{Rate: ptr(uint64(5_000_000)), Delay: ptr(time.Millisecond)}, []string{"rate changes nothing: up-rate and down-rate are set"}},
		{geo, Settings{UpRate: ptr(uint64(5_000_000))}, nil},
		{Settings{UpRate: ptr(uint64(1))}, Settings{Rate: ptr(uint64(5_000_000))}, nil},
		{lte, Settings{Jitter: &Jitter{}}, nil},
	}
	for _, tt := range tests {
		got := tt.base.Merge(tt.set).Shadowed(tt.set)
		if len(got) != len(tt.want) {
			t.Errorf("%v over %v: %q, want %q", tt.set.Given(), tt.base.Given(), got, tt.want)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], tt.want[i]) {
				t.Errorf("%v over %v: %q, want %q...", tt.set.Given(), tt.base.Given(), got[i], tt.want[i])
			}
		}
	}
}
