package testbed

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestProgressLine(t *testing.T) {
	t0 := time.Unix(1000, 0)
	now := t0
	p := NewProgress(nil, false, 100*time.Second)
	p.now = func() time.Time { return now }
	p.Start()
	steps := []struct {
		phase   string
		planned time.Duration
		advance time.Duration
		want    string
	}{
		{"run 1/2", 50 * time.Second, 10 * time.Second, "[==>                           ]  10%  0:10 elapsed, ~1:30 left  run 1/2"},
		{"", 0, 45 * time.Second, "[==============>               ]  50%  0:55 elapsed, ~0:50 left  run 1/2"}, // over plan: capped at the phase
		{"run 2/2", 50 * time.Second, 50 * time.Second, "[==============================] 100%  1:45 elapsed, ~0:00 left  run 2/2"},
	}
	for _, s := range steps {
		if s.phase != "" {
			p.Phase(s.phase, s.planned)
		}
		now = now.Add(s.advance)
		if got := p.Line(); got != s.want {
			t.Errorf("after %v:\n got %q\nwant %q", now.Sub(t0), got, s.want)
		}
	}
}

func TestProgressFitsTheTerminal(t *testing.T) {
	p := NewProgress(nil, true, time.Minute)
	p.SetWidth(40)
	p.Start()
	p.Phase("run 1/3: DualPI2, call on L4S", time.Minute)
	if got := p.Line(); len([]rune(got)) != 39 || !strings.HasPrefix(got, "[") {
		t.Errorf("line %q: want 39 columns on a 40-column terminal", got)
	}
}

func TestProgressLogLines(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b, false, time.Minute)
	p.Start()
	p.Phase("run 1/1 coexist", time.Minute)
	p.Stop()
	if got := b.String(); !strings.HasPrefix(got, "lab: run 1/1 coexist (1m0s planned; 0:00 elapsed, ~1:00 left)\n") {
		t.Errorf("log line %q", got)
	}
	var nilP *Progress
	nilP.Start() // a nil Progress reports nothing and must not panic
	nilP.Phase("x", time.Second)
	nilP.Stop()
}
