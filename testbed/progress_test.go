package testbed

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestProgressStatus(t *testing.T) {
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
		{"run 1/2", 50 * time.Second, 10 * time.Second, " 10%  0:10 elapsed, ~1:30 left  run 1/2"},
		{"", 0, 45 * time.Second, " 50%  0:55 elapsed, ~0:50 left  run 1/2"}, // over plan: capped at the phase
		{"run 2/2", 50 * time.Second, 50 * time.Second, "100%  1:45 elapsed, ~0:00 left  run 2/2"},
	}
	for _, s := range steps {
		if s.phase != "" {
			p.Phase(s.phase, s.planned)
		}
		now = now.Add(s.advance)
		if got := p.Status(); got != s.want {
			t.Errorf("after %v:\n got %q\nwant %q", now.Sub(t0), got, s.want)
		}
	}
}

// On a terminal mpb draws the bar with the status beside it, every line
// within the terminal's width, and takes it away at Stop.
func TestProgressBarFitsTheTerminal(t *testing.T) {
	var out syncBuffer
	p := NewProgress(&out, true, time.Minute)
	p.SetWidth(60)
	p.Start()
	p.Phase("run 1/3: DualPI2, call on L4S", time.Minute)
	time.Sleep(3 * refresh)
	p.Stop()
	text := out.String()
	if !strings.HasPrefix(text, "[") || !strings.Contains(text, " elapsed, ~") {
		t.Fatalf("no bar drawn: %q", text)
	}
	for _, line := range strings.Split(ansi.ReplaceAllString(text, ""), "\n") {
		if n := len([]rune(line)); n > 59 {
			t.Errorf("line %q: %d columns, want at most 59 on a 60-column terminal", line, n)
		}
	}
}

// ansi matches the cursor and erase sequences a redrawn bar writes.
var ansi = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")

// syncBuffer is a bytes.Buffer that mpb's goroutine and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
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
