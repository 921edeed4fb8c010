package testbed

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/vbauerster/cupwriter"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// Progress shows how far a lab has got: on a terminal a bar redrawn in
// place with elapsed and remaining time, elsewhere (logs, CI) one line per
// run. Remaining time comes from the planned durations, so it is an
// estimate that setup and teardown stretch a little.
//
// mpb draws the bar from its own goroutine; Phase only records the step
// under a mutex the drawing takes briefly, so a slow or stopped terminal
// never holds up a run.
type Progress struct {
	w      io.Writer
	cw     mpb.ConsoleWriter // where the bar is drawn; nil: one line per run
	total  time.Duration     // planned, all runs
	now    func() time.Time
	width  int        // columns of a forced terminal; a real one is asked at each redraw
	redraw <-chan any // nil: every refreshEvery; tests redraw on demand

	mu         sync.Mutex
	start      time.Time
	done       time.Duration // planned time of the runs finished
	phase      string
	phaseStart time.Time
	phaseLen   time.Duration

	// Between Start and Stop on a terminal; Start and Stop come from one
	// goroutine, the lab's.
	bars *mpb.Progress
	bar  *mpb.Bar
}

const (
	// barWidth is the bar's length in characters, brackets aside.
	barWidth = 30
	// refreshEvery: the clocks show whole seconds, and a lab measures
	// latency on a shared machine, so the bar redraws no more than it must.
	refreshEvery = 500 * time.Millisecond
	// fillScale is the resolution of the fraction handed to the filler.
	fillScale = 10000
)

// NewProgress reports to w a lab planned to take total. tty selects the
// redrawn bar even when w is not a terminal; a nil w reports nothing.
func NewProgress(w io.Writer, tty bool, total time.Duration) *Progress {
	p := &Progress{w: w, total: total, now: time.Now}
	if tty && w != nil {
		p.cw = cupwriter.New(w, true)
	}
	return p
}

// NewTerminalProgress is NewProgress with the redrawn bar when w is a
// terminal, fitted to its width at each redraw; on anything else (a file,
// a pipe) it prints line by line. So does a terminal that reports no size
// (a pseudo-terminal nobody sized): mpb fits the bar to the size and would
// draw nothing.
func NewTerminalProgress(w io.Writer, total time.Duration) *Progress {
	p := NewProgress(w, false, total)
	if w == nil {
		return p
	}
	if cw := cupwriter.New(w, false); cw.IsTerminal() {
		if cols, rows, err := cw.GetTermSize(); err == nil && cols > 0 && rows > 0 {
			p.cw = cw
		}
	}
	return p
}

// SetWidth tells a bar forced onto something that is not a terminal how
// many columns to fit; a terminal's own width wins.
func (p *Progress) SetWidth(cols int) {
	if p != nil {
		p.width = cols
	}
}

// Start begins the clock and, on a terminal, draws the bar until Stop.
func (p *Progress) Start() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.start = p.now()
	p.mu.Unlock()
	if p.cw == nil || p.bars != nil {
		return
	}
	opts := []mpb.ContainerOption{mpb.WithConsoleWriter(p.cw), mpb.WithRefreshRate(refreshEvery)}
	if p.width > 0 {
		opts = append(opts, mpb.WithWidth(p.width))
	}
	if p.redraw != nil {
		opts = append(opts, mpb.WithManualRefresh(p.redraw))
	} else {
		// A console writer given to mpb redraws on its own only when it is
		// a real terminal; a forced one must be asked to.
		opts = append(opts, mpb.WithAutoRefresh())
	}
	p.bars = mpb.New(opts...)
	// Total 0: the bar never completes by itself; its fill and text come
	// from the lab's clock at each redraw, and Stop ends it.
	p.bar = p.bars.New(0,
		mpb.BarStyle().Lbound("[").Filler("=").Tip(">").Padding(" ").Rbound("]"),
		mpb.BarWidth(barWidth+2), mpb.BarFillerTrim(),
		mpb.BarFillerMiddleware(p.filler),
		mpb.AppendDecorators(decor.Any(p.text)))
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
	if p.w != nil && p.cw == nil {
		el, left, _ := p.times()
		fmt.Fprintf(p.w, "lab: %s (%v planned; %s elapsed, ~%s left)\n", name, d, clock(el), clock(left))
	}
}

// Stop ends the display: the bar is erased, leaving the cursor at the
// start of the line it held. It returns once mpb has drawn its last.
func (p *Progress) Stop() {
	if p == nil || p.bars == nil {
		return
	}
	p.bar.Abort(true) // true: drop the bar from the screen
	p.bars.Wait()
	p.bars, p.bar = nil, nil
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

// filler fills mpb's bar from the planned time run so far, read at each
// redraw, so the bar moves within a run without anyone feeding it.
func (p *Progress) filler(base mpb.BarFiller) mpb.BarFiller {
	return mpb.BarFillerFunc(func(w io.Writer, st decor.Statistics) error {
		_, _, frac := p.times()
		st.Total, st.Current = fillScale, int64(frac*fillScale)
		st.Completed = frac >= 1 // a full bar has no tip
		return base.Fill(w, st)
	})
}

// text is what follows the bar. mpb lays text out before the bar, so the
// text leaves the bar its room and one column: a line reaching the last
// column may wrap, and a wrapped line cannot be redrawn in place.
func (p *Progress) text(st decor.Statistics) string {
	el, left, frac := p.times()
	p.mu.Lock()
	phase := p.phase
	p.mu.Unlock()
	s := fmt.Sprintf(" %3.0f%%  %s elapsed, ~%s left  %s", 100*frac, clock(el), clock(left), phase)
	if r, room := []rune(s), st.AvailableWidth-(barWidth+2)-1; len(r) > room {
		s = string(r[:max(0, room)])
	}
	return s
}

// clock formats d as m:ss.
func clock(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
