package testbed

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Progress shows how far a lab has got: on a terminal a bar redrawn in
// place with elapsed and remaining time, elsewhere (logs, CI) one line per
// run. Remaining time comes from the planned durations, so it is an
// estimate that setup and teardown stretch a little.
type Progress struct {
	w     io.Writer
	tty   bool
	total time.Duration // planned, all runs
	now   func() time.Time
	width int // terminal columns; 0 = unknown

	mu         sync.Mutex
	start      time.Time
	done       time.Duration // planned time of the runs finished
	phase      string
	phaseStart time.Time
	phaseLen   time.Duration
	drawn      bool
	stop       chan struct{}
	stopped    chan struct{}
}

// barWidth is the bar's length in characters.
const barWidth = 30

// NewProgress reports to w a lab planned to take total. tty selects the
// redrawn bar; a nil w reports nothing.
func NewProgress(w io.Writer, tty bool, total time.Duration) *Progress {
	return &Progress{w: w, tty: tty, total: total, now: time.Now}
}

// NewTerminalProgress is NewProgress with the redrawn bar when w is a
// terminal, fitted to its width; on anything else (a file, a pipe, not
// Linux) it prints line by line.
func NewTerminalProgress(w io.Writer, total time.Duration) *Progress {
	cols, tty := terminalWidth(w)
	p := NewProgress(w, tty, total)
	p.SetWidth(cols)
	return p
}

// SetWidth tells the bar how many columns the terminal has, so a line
// never wraps (a wrapped line cannot be redrawn in place).
func (p *Progress) SetWidth(cols int) {
	if p != nil {
		p.width = cols
	}
}

// Start begins the clock and, on a terminal, redraws twice a second until Stop.
func (p *Progress) Start() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.start = p.now()
	p.mu.Unlock()
	if p.w == nil || !p.tty {
		return
	}
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.stopped)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.draw()
			}
		}
	}()
}

// Phase marks the start of a step planned to take d; the previous step
// counts as done.
func (p *Progress) Phase(name string, d time.Duration) {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.start.IsZero() {
		p.start = p.now() // Phase without Start: the clock starts here
	}
	if p.phase != "" {
		p.done += p.phaseLen
	}
	p.phase, p.phaseStart, p.phaseLen = name, p.now(), d
	p.mu.Unlock()
	if p.w != nil && !p.tty {
		el, left, _ := p.times()
		fmt.Fprintf(p.w, "lab: %s (%v planned; %s elapsed, ~%s left)\n", name, d, clock(el), clock(left))
	}
	p.draw()
}

// Stop ends the display, leaving the terminal on a fresh line.
func (p *Progress) Stop() {
	if p == nil {
		return
	}
	if p.stop != nil {
		close(p.stop)
		<-p.stopped
		p.stop = nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.drawn && p.w != nil {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// times returns elapsed and remaining time and the fraction done.
func (p *Progress) times() (elapsed, left time.Duration, frac float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	elapsed = now.Sub(p.start)
	progressed := p.done
	if p.phase != "" {
		progressed += min(now.Sub(p.phaseStart), p.phaseLen)
	}
	left = max(0, p.total-progressed)
	if p.total > 0 {
		frac = min(1, float64(progressed)/float64(p.total))
	}
	return elapsed, left, frac
}

// Line renders the bar as it would be drawn now.
func (p *Progress) Line() string {
	el, left, frac := p.times()
	n := int(frac * barWidth)
	bar := strings.Repeat("=", n) + strings.Repeat(" ", barWidth-n)
	if n > 0 && n < barWidth {
		bar = strings.Repeat("=", n-1) + ">" + strings.Repeat(" ", barWidth-n)
	}
	p.mu.Lock()
	phase := p.phase
	p.mu.Unlock()
	line := fmt.Sprintf("[%s] %3.0f%%  %s elapsed, ~%s left  %s", bar, 100*frac, clock(el), clock(left), phase)
	if r := []rune(line); p.width > 1 && len(r) >= p.width {
		line = string(r[:p.width-1])
	}
	return line
}

func (p *Progress) draw() {
	if p.w == nil || !p.tty {
		return
	}
	line := p.Line()
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, "\r\033[K"+line)
	p.drawn = true
}

// clock formats d as m:ss.
func clock(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
