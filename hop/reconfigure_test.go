package hop

import (
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
)

func TestChanges(t *testing.T) {
	ge := &shaper.GilbertElliott{P: 0.01, R: 0.3, LossBad: 1}
	base := testConfig(10_000_000, time.Millisecond).Up
	base.Link.Loss = ge
	fifo, _ := aqm.DefaultSpec(aqm.KindFIFO)
	for _, tt := range []struct {
		name string
		edit func(d *DirConfig)
		want string
	}{
		{"nothing", func(d *DirConfig) {}, "none"},
		{"same rate, another value", func(d *DirConfig) { d.Link.Rate = shaper.Const{BitsPerSecond: 10_000_000} }, "none"},
		{"rate", func(d *DirConfig) { d.Link.Rate = shaper.Unlimited{} }, "rate"},
		{"delay and jitter", func(d *DirConfig) {
			d.Link.Delay, d.Link.Jitter = int64(time.Second), shaper.Jitter{Amount: 1}
		}, "delay+jitter"},
		{"the running loss model", func(d *DirConfig) { d.Link.Loss = ge }, "none"},
		{"a loss model alike but new", func(d *DirConfig) { g := *ge; d.Link.Loss = &g }, "loss"},
		{"no loss", func(d *DirConfig) { d.Link.Loss = nil }, "loss"},
		{"aggregate", func(d *DirConfig) { d.Link.Aggregate = shaper.Aggregate{Interval: 1, Bytes: 1500} }, "aggregate"},
		{"queue knob", func(d *DirConfig) { d.Queue.DualPI2.Coupling = 3 }, "queue"},
		{"queue kind", func(d *DirConfig) { d.Queue = fifo }, "queue"},
	} {
		next := base
		tt.edit(&next)
		if got := base.Changes(next).String(); got != tt.want {
			t.Errorf("%s: changes %s, want %s", tt.name, got, tt.want)
		}
	}
}

// Whatever lies outside the directions was fixed when the hop was built:
// a change to any of it is refused, saying which and why.
func TestReconfigureRefusesFixed(t *testing.T) {
	h := startHop(t, testConfig(10_000_000, 0))
	cur := h.Config()
	v := reflect.ValueOf(&cur).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Name == "Up" || f.Name == "Down" {
			continue
		}
		next := cur
		nv := reflect.ValueOf(&next).Elem().Field(i)
		switch nv.Kind() {
		case reflect.String:
			nv.SetString(nv.String() + "x")
		case reflect.Int, reflect.Int64:
			nv.SetInt(nv.Int() + 1)
		case reflect.Uint64:
			nv.SetUint(nv.Uint() + 1)
		case reflect.Bool:
			nv.SetBool(!nv.Bool())
		case reflect.Pointer:
			nv.Set(reflect.ValueOf(slog.New(slog.DiscardHandler)))
		default:
			t.Fatalf("Config.%s: a %v this test cannot change", f.Name, nv.Kind())
		}
		err := h.Reconfigure(next)
		if err == nil || !strings.Contains(err.Error(), "cannot change while the hop runs: ") {
			t.Errorf("Config.%s changed: %v, want it refused with the reason", f.Name, err)
		}
	}
	next := cur
	next.Down.Link.Origin = 1
	if err := h.Reconfigure(next); err == nil || !strings.HasPrefix(err.Error(), "hop: down: origin cannot change") {
		t.Errorf("origin changed: %v", err)
	}
	if err := h.Reconfigure(cur); err != nil {
		t.Errorf("the running configuration: %v, want nothing to change", err)
	}
}

// A rate the same as the running one (a trace read again) leaves the
// running value, and its schedule, alone; the loss model stays unless
// another one is given.
func TestReconfigureKeepsWhatIsSame(t *testing.T) {
	trace := func() shaper.Rate {
		r, err := shaper.ParseMahimahi(strings.NewReader("1\n2\n2\n4\n"))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	cfg := testConfig(10_000_000, 0)
	cfg.Up.Link.Rate = trace()
	cfg.Up.Link.Loss = &shaper.GilbertElliott{P: 0.01, R: 0.3, LossBad: 1}
	h := startHop(t, cfg)
	running := h.Config().Up
	next := h.Config()
	next.Up.Link.Rate = trace()
	next.Up.Link.Delay = int64(time.Millisecond)
	if err := h.Reconfigure(next); err != nil {
		t.Fatal(err)
	}
	got := h.Config().Up
	if got.Link.Rate != running.Link.Rate || got.Link.Loss != running.Link.Loss || got.Link.Delay != int64(time.Millisecond) {
		t.Errorf("after a delay change: rate %p (running %p), loss %p (running %p), delay %d",
			got.Link.Rate, running.Link.Rate, got.Link.Loss, running.Link.Loss, got.Link.Delay)
	}
	if s := h.Stats(); s.Up.Delay != int64(time.Millisecond) {
		t.Errorf("the owner's delay is %d", s.Up.Delay)
	}
}
