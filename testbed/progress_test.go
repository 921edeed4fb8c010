package testbed

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vbauerster/cupwriter"
)

// screen is a fake terminal: it applies what the bar writes (text, line
// feeds, and the cursor-up and erase sequences mpb redraws with) to a grid
// of lines, and says when a redraw has reached it.
type screen struct {
	cols  int
	wrote chan struct{}

	mu       sync.Mutex
	lines    [][]rune
	row, col int
	wrapped  bool // a line reached the last column
	errs     []string
}

func newScreen(cols int) *screen {
	return &screen{cols: cols, wrote: make(chan struct{}, 64)}
}

func (s *screen) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := []rune(string(b))
	for i := 0; i < len(r); i++ {
		switch c := r[i]; {
		case c == '\n': // the tty's output processing adds the carriage return
			s.row, s.col = s.row+1, 0
		case c == '\r':
			s.col = 0
		case c == '\x1b' && i+1 < len(r) && r[i+1] == '[':
			j := i + 2
			for j < len(r) && r[j] >= '0' && r[j] <= '9' {
				j++
			}
			n, _ := strconv.Atoi(string(r[i+2 : j]))
			if j == len(r) {
				s.errs = append(s.errs, "unterminated escape "+strconv.Quote(string(r[i:])))
				i = j
				continue
			}
			switch r[j] {
			case 'A':
				s.row = max(0, s.row-max(n, 1))
			case 'J': // erase from the cursor to the end of the screen
				s.line()
				s.lines[s.row] = s.lines[s.row][:min(s.col, len(s.lines[s.row]))]
				s.lines = s.lines[:s.row+1]
			case 'K': // erase from the cursor to the end of the line
				s.line()
				s.lines[s.row] = s.lines[s.row][:min(s.col, len(s.lines[s.row]))]
			default:
				s.errs = append(s.errs, "unknown escape "+strconv.Quote(string(r[i:j+1])))
			}
			i = j
		default:
			s.line()
			l := s.lines[s.row]
			for len(l) < s.col {
				l = append(l, ' ')
			}
			if s.col < len(l) {
				l[s.col] = c
			} else {
				l = append(l, c)
			}
			s.lines[s.row] = l
			s.col++
			if s.col >= s.cols {
				s.wrapped = true
			}
		}
	}
	select {
	case s.wrote <- struct{}{}:
	default:
	}
	return len(b), nil
}

// line makes sure the cursor's line exists.
func (s *screen) line() {
	for len(s.lines) <= s.row {
		s.lines = append(s.lines, nil)
	}
}

// text returns the screen's non-empty lines and the cursor's row.
func (s *screen) text() (lines []string, row int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.lines {
		if t := strings.TrimRight(string(l), " "); t != "" {
			lines = append(lines, t)
		}
	}
	return lines, s.row
}

func (s *screen) check(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.errs {
		t.Error(e)
	}
	if s.wrapped {
		t.Errorf("a line reached column %d of %d: it may wrap", s.cols, s.cols)
	}
}

// sizedTerminal is mpb's console writer on a screen that says it is a
// terminal of the screen's width, as a real one does at each redraw.
type sizedTerminal struct {
	*cupwriter.Writer
	s *screen
}

func (t sizedTerminal) IsTerminal() bool { return true }

func (t sizedTerminal) GetTermSize() (int, int, error) { return t.s.cols, 24, nil }

// onTerminal returns a progress drawing on a fake terminal of cols
// columns, redrawn when redraw is called, and its screen.
func onTerminal(t *testing.T, cols int, total time.Duration) (p *Progress, s *screen, redraw func()) {
	s = newScreen(cols)
	p = NewProgress(s, true, total)
	p.cw = sizedTerminal{cupwriter.New(s, true), s}
	ch := make(chan any)
	p.redraw = ch
	return p, s, func() {
		t.Helper()
		ch <- nil
		select {
		case <-s.wrote:
		case <-time.After(10 * time.Second):
			t.Fatal("no redraw reached the terminal")
		}
	}
}

func TestProgressBar(t *testing.T) {
	t0 := time.Unix(1000, 0)
	now := t0
	p, s, redraw := onTerminal(t, 80, 100*time.Second)
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
	for _, st := range steps {
		if st.phase != "" {
			p.Phase(st.phase, st.planned)
		}
		now = now.Add(st.advance)
		redraw()
		// Redrawn in place: one line, the cursor below it.
		if lines, row := s.text(); len(lines) != 1 || lines[0] != st.want || row != 1 {
			t.Errorf("after %v: screen %q, cursor on row %d\nwant %q, cursor on row 1", now.Sub(t0), lines, row, st.want)
		}
	}
	p.Stop()
	if lines, row := s.text(); len(lines) != 0 || row != 0 {
		t.Errorf("after Stop: screen %q, cursor on row %d; want the bar erased and the cursor on its line", lines, row)
	}
	s.check(t)
	p.Stop() // a second Stop does nothing
}

func TestProgressFitsTheTerminal(t *testing.T) {
	p, s, redraw := onTerminal(t, 40, time.Minute)
	p.Start()
	p.Phase("run 1/3: DualPI2, call on L4S", time.Minute)
	redraw()
	lines, _ := s.text()
	// The text gives way to the bar, and the line keeps off the last column.
	if len(lines) != 1 || len([]rune(lines[0])) > 39 || !strings.HasPrefix(lines[0], "[") || strings.Index(lines[0], "]") != barWidth+1 {
		t.Errorf("screen %q: want the whole bar on one line within 39 columns of a 40-column terminal", lines)
	}
	p.Stop()
	s.check(t)
}

// A bar forced onto something that is not a terminal fits the width it
// is given.
func TestProgressForcedWidth(t *testing.T) {
	s := newScreen(50)
	p := NewProgress(s, true, time.Minute)
	p.SetWidth(50)
	ch := make(chan any)
	p.redraw = ch
	p.Start()
	p.Phase("run 1/1: a rather long scenario title that does not fit", time.Minute)
	ch <- nil
	<-s.wrote
	if lines, _ := s.text(); len(lines) != 1 || len([]rune(lines[0])) != 49 {
		t.Errorf("screen %q: want one line of 49 columns", lines)
	}
	p.Stop()
	s.check(t)
}

// stuckTerminal takes a redraw and holds it until released, as a terminal
// does when its output is paused (Ctrl-S) or its reader has stopped.
type stuckTerminal struct {
	sizedTerminal
	entered, release chan struct{}
	once             sync.Once
}

func (t *stuckTerminal) Flush(lines int) error {
	t.once.Do(func() { close(t.entered) })
	<-t.release
	return t.sizedTerminal.Flush(lines)
}

// The lab's runs never wait for the terminal: Phase returns while a
// redraw is stuck, and Stop returns once the terminal takes output again.
func TestProgressNeverBlocksARun(t *testing.T) {
	s := newScreen(80)
	p := NewProgress(nil, false, time.Minute)
	term := &stuckTerminal{sizedTerminal: sizedTerminal{cupwriter.New(s, true), s},
		entered: make(chan struct{}), release: make(chan struct{})}
	p.cw = term
	ch := make(chan any)
	p.redraw = ch
	p.Start()
	ch <- nil
	<-term.entered
	phased := make(chan struct{})
	go func() {
		for i := range 10 {
			p.Phase("run "+strconv.Itoa(i+1)+"/10", time.Second)
		}
		close(phased)
	}()
	select {
	case <-phased:
	case <-time.After(10 * time.Second):
		t.Fatal("Phase waited for a stuck terminal")
	}
	close(term.release)
	stopped := make(chan struct{})
	go func() { p.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return once the terminal took output again")
	}
	if lines, _ := s.text(); len(lines) != 0 {
		t.Errorf("after Stop: screen %q; want the bar erased", lines)
	}
	s.check(t)
}

func TestProgressLogLines(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b, false, time.Minute)
	p.Start()
	p.Phase("run 1/1 coexist", time.Minute)
	p.Stop()
	if got := b.String(); got != "lab: run 1/1 coexist (1m0s planned; 0:00 elapsed, ~1:00 left)\n" {
		t.Errorf("log %q: want one plain line per run, nothing else", got)
	}
	var nilP *Progress
	nilP.Start() // a nil Progress reports nothing and must not panic
	nilP.Phase("x", time.Second)
	nilP.Stop()
}

// A buffer or a plain file is not a terminal: the progress prints line
// by line.
func TestTerminalProgressOnNonTerminals(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, w := range map[string]io.Writer{"buffer": &bytes.Buffer{}, "file": f, "nil": nil} {
		p := NewTerminalProgress(w, time.Minute)
		if p.cw != nil || p.total != time.Minute {
			t.Errorf("%s: drawn as a bar %v, total %v; want line by line, 1m", name, p.cw != nil, p.total)
		}
	}
}
