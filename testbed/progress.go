package testbed

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// Progress shows how far a lab has got: on a terminal a bar drawn by mpb
// with elapsed and remaining time, elsewhere (logs, CI) one line per
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

	bars    *mpb.Progress
	bar     *mpb.Bar
	stop    chan struct{}
	stopped chan struct{}
}

// barWidth is the bar's length in characters; barSteps its resolution.
const (
	barWidth = 30
	barSteps = 1000
)

// refresh is how often the bar is redrawn.
const refresh = 500 * time.Millisecond

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

// Start begins the clock and, on a terminal, the bar, redrawn until Stop.
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
	// The bar's position is the planned time done, which only this
	// package knows: a ticker moves it, mpb draws it. Auto refresh draws
	// on any writer the caller found to be a terminal.
	p.bars = mpb.New(mpb.WithOutput(p.w), mpb.WithRefreshRate(refresh), mpb.WithAutoRefresh(),
		mpb.ContainerOptional(mpb.WithWidth(p.width-1), p.width > 1))
	p.bar = p.bars.New(barSteps,
		mpb.BarStyle().Lbound("[").Filler("=").Tip(">").Padding(" ").Rbound("]"),
		mpb.BarWidth(barWidth), mpb.BarFillerTrim(),
		mpb.AppendDecorators(decor.Any(func(st decor.Statistics) string {
			// mpb fills decorators first and gives the bar what is left:
			// leave the bar its width, cut the status on a narrow terminal.
			return truncate(" "+p.Status(), st.AvailableWidth-barWidth)
		})))
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.stopped)
		t := time.NewTicker(refresh)
		defer t.Stop()
		for {
			p.advance()
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
}

// advance moves the bar to the fraction of the planned time done.
func (p *Progress) advance() {
	_, _, frac := p.times()
	p.bar.SetCurrent(min(int64(frac*barSteps), barSteps-1)) // full only at Stop
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
}

// Stop ends the display: the bar is taken off the terminal, leaving it
// on a fresh line.
func (p *Progress) Stop() {
	if p == nil || p.stop == nil {
		return
	}
	close(p.stop)
	<-p.stopped
	p.stop = nil
	p.bar.Abort(true)
	p.bars.Wait()
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

// Status is the text beside the bar: the share of the planned time done,
// elapsed and remaining time, and the step under way.
func (p *Progress) Status() string {
	el, left, frac := p.times()
	p.mu.Lock()
	phase := p.phase
	p.mu.Unlock()
	return fmt.Sprintf("%3.0f%%  %s elapsed, ~%s left  %s", 100*frac, clock(el), clock(left), phase)
}

// truncate cuts s to at most n runes.
func truncate(s string, n int) string {
	if r := []rune(s); len(r) > max(n, 0) {
		return string(r[:max(n, 0)])
	}
	return s
}

// clock formats d as m:ss.
func clock(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
