package report

import (
	"fmt"
	"strings"

	"github.com/pi2hop/pi2hop/figure"
)

// App is the user's own app in one variant of `pi2hop lab app`: what the
// hop saw of its flows (every flow of its namespaces but the lab's cross
// traffic), how its commands ended and the metrics they printed.
type App struct {
	Flows int `json:"flows"` // the app's flows the hop saw, each direction counted apart
	// RTTMs is the app's round trip through the hop, measured passively
	// at the hop (client half + server half, see docs/flows.md); nil when
	// none of its flows gave a sample, RTTNote then says why.
	RTTMs       *figure.Summary `json:"rtt_ms,omitempty"`
	ClientRTTMs *figure.Summary `json:"client_half_rtt_ms,omitempty"`
	ServerRTTMs *figure.Summary `json:"server_half_rtt_ms,omitempty"`
	RTTNote     string          `json:"rtt_note,omitempty"`
	// UpBps and DownBps are the app's bytes the hop delivered each way
	// over the app's run time.
	UpBps   float64 `json:"up_bps"`
	DownBps float64 `json:"down_bps"`
	// Sent is what the app's packets carried when they reached the hop,
	// by codepoint (packets); Received what they carried when they left
	// it for the other end (marks and path faults applied).
	Sent     ECNPackets `json:"sent"`
	Received ECNPackets `json:"received"`
	// ClientSent is Sent of the client's packets alone (client to server):
	// what the app's client chose, whatever the server side reflects.
	ClientSent ECNPackets `json:"client_sent"`
	// FellBack counts the app's flows that started ECT(1) and changed to
	// another codepoint: an ECN validation that gave up on L4S.
	FellBack int         `json:"flows_fell_back"`
	Marks    uint64      `json:"ce_marks"` // CE marks the hop's queue applied
	Drops    uint64      `json:"drops"`    // the app's packets the hop dropped, any reason
	Client   AppExit     `json:"client"`
	Server   *AppExit    `json:"server,omitempty"`
	Metrics  []AppMetric `json:"metrics,omitempty"`
}

// ECNPackets counts packets by ECN codepoint.
type ECNPackets struct {
	NotECT uint64 `json:"not_ect"`
	ECT1   uint64 `json:"ect1"`
	ECT0   uint64 `json:"ect0"`
	CE     uint64 `json:"ce"`
}

// Total is every packet counted.
func (e ECNPackets) Total() uint64 { return e.NotECT + e.ECT1 + e.ECT0 + e.CE }

// L4SShare is the share of packets sent as ECT(1) or CE: the app asked
// for L4S treatment (CE on arrival means an earlier hop marked ECT(1)
// or ECT(0); counted with ECT(1), as the hop classifies it).
func (e ECNPackets) L4SShare() float64 {
	if e.Total() == 0 {
		return 0
	}
	return float64(e.ECT1+e.CE) / float64(e.Total())
}

// AppExit is how one of the app's commands ended.
type AppExit struct {
	Command string  `json:"command"`
	Code    int     `json:"exit_code"` // 128+N when killed by signal N
	RunS    float64 `json:"run_s"`     // from its start to its end
	// Stopped: the lab ended it (SIGTERM) at the end of --duration; its
	// status then says nothing about the app.
	Stopped bool `json:"stopped_by_lab"`
	// Failed: it ended by itself with a non-zero status, or could not
	// start. Such a run's figures are kept out of the comparison.
	Failed     bool     `json:"failed"`
	StderrTail []string `json:"stderr_tail,omitempty"` // its last lines of standard error
}

// AppMetric is one metric the app printed ({"metric": NAME, "value": X,
// "unit": U} lines on standard output), summarised over the run.
type AppMetric struct {
	Name    string         `json:"name"`
	Unit    string         `json:"unit,omitempty"`
	From    string         `json:"from"` // "client" or "server"
	Summary figure.Summary `json:"summary"`
}

// Failed reports whether a command of the app failed (AppExit.Failed).
func (a *App) Failed() bool {
	return a.Client.Failed || (a.Server != nil && a.Server.Failed)
}

// appTable sets the variants side by side, as the WWDC session's A/B.
func (r *Report) appTable() (Table, bool) {
	var runs []Run
	for _, run := range r.Runs {
		if run.App != nil {
			runs = append(runs, run)
		}
	}
	if len(runs) == 0 {
		return Table{}, false
	}
	t := Table{Title: "Your app", Header: []string{"figure"}}
	for _, run := range runs {
		t.Header = append(t.Header, run.Title)
	}
	row := func(name string, f func(a *App, run *Run) string) {
		cells := []string{name}
		for i := range runs {
			cells = append(cells, f(runs[i].App, &runs[i]))
		}
		t.Rows = append(t.Rows, cells)
	}
	rtt := func(get func(*App) *figure.Summary, q func(figure.Summary) float64) func(*App, *Run) string {
		return func(a *App, _ *Run) string {
			if s := get(a); s != nil && s.N > 0 {
				return ms(q(*s))
			}
			return "–"
		}
	}
	sum := func(a *App) *figure.Summary { return a.RTTMs }
	row("RTT p50 (ms)", rtt(sum, func(s figure.Summary) float64 { return s.P50 }))
	row("RTT p99 (ms)", rtt(sum, func(s figure.Summary) float64 { return s.P99 }))
	row("RTT max (ms)", rtt(sum, func(s figure.Summary) float64 { return s.Max }))
	row("client half p50 / p99 (ms)", func(a *App, _ *Run) string { return halves(a.ClientRTTMs) })
	row("server half p50 / p99 (ms)", func(a *App, _ *Run) string { return halves(a.ServerRTTMs) })
	row("goodput down / up (Mbit/s)", func(a *App, _ *Run) string { return mbit(a.DownBps) + " / " + mbit(a.UpBps) })
	row("ECT(1) sent: client / all", func(a *App, _ *Run) string { return pct(a.ClientSent.L4SShare()) + " / " + pct(a.Sent.L4SShare()) })
	row("sent / received", func(a *App, _ *Run) string { return a.Sent.Shares() + " → " + a.Received.Shares() })
	row("CE marks", func(a *App, _ *Run) string { return fmt.Sprint(a.Marks) })
	row("drops", func(a *App, _ *Run) string { return fmt.Sprint(a.Drops) })
	row("L / C sojourn p99 (ms)", func(_ *App, run *Run) string {
		l, c := "–", "–"
		if q := run.queue("L"); q != nil && q.SojournMs.N > 0 {
			l = ms(q.SojournMs.P99)
		}
		if q := run.queue("C"); q != nil && q.SojournMs.N > 0 {
			c = ms(q.SojournMs.P99)
		}
		return l + " / " + c
	})
	for _, name := range metricNames(runs) {
		row(name+" p50 / p99 / mean", func(a *App, _ *Run) string {
			for _, m := range a.Metrics {
				if m.From+" "+m.Name == name {
					return fmt.Sprintf("%.4g / %.4g / %.4g %s", m.Summary.P50, m.Summary.P99, m.Summary.Mean, m.Unit)
				}
			}
			return "–"
		})
	}
	row("client", func(a *App, _ *Run) string { return a.Client.String() })
	if runs[0].App.Server != nil {
		row("server", func(a *App, _ *Run) string { return a.Server.String() })
	}
	for _, run := range runs {
		if run.App.RTTNote != "" {
			t.Notes = append(t.Notes, run.Title+": "+run.App.RTTNote+".")
		}
		if run.App.Failed() {
			t.Notes = append(t.Notes, run.Title+": the app did not run to its end (see its exit and standard error in report.json); its figures are not comparable.")
		}
	}
	return t, true
}

// metricNames are the app's metrics over all runs, "client NAME" or
// "server NAME", in the order first seen.
func metricNames(runs []Run) []string {
	var names []string
	seen := map[string]bool{}
	for _, run := range runs {
		for _, m := range run.App.Metrics {
			if n := m.From + " " + m.Name; !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	return names
}

func halves(s *figure.Summary) string {
	if s == nil || s.N == 0 {
		return "–"
	}
	return ms(s.P50) + " / " + ms(s.P99)
}

// Shares names the codepoints that make up at least 1 % of e, with their
// shares ("ECT(1) 84%, CE 15%"); "none" when e counts nothing.
func (e ECNPackets) Shares() string {
	n := e.Total()
	if n == 0 {
		return "none"
	}
	var parts []string
	for _, c := range []struct {
		name string
		n    uint64
	}{{"ECT(1)", e.ECT1}, {"ECT(0)", e.ECT0}, {"CE", e.CE}, {"Not-ECT", e.NotECT}} {
		if c.n*100 >= n {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", c.name, 100*float64(c.n)/float64(n)))
		}
	}
	return strings.Join(parts, ", ")
}

func (e AppExit) String() string {
	switch {
	case e.Stopped:
		return fmt.Sprintf("stopped by the lab after %.1f s", e.RunS)
	case e.Failed && e.Code < 0:
		return "did not start"
	case e.Failed:
		return fmt.Sprintf("FAILED: exit %d after %.1f s", e.Code, e.RunS)
	}
	return fmt.Sprintf("exit 0 after %.1f s", e.RunS)
}

// Finding is one plain statement of what an A/B shows ("the app sent
// ECT(1) on the l4s path": yes), with the figures behind it.
type Finding struct {
	Question string `json:"question"`
	Answer   string `json:"answer"` // yes, no, unknown, not applicable
	Detail   string `json:"detail"`
}

func (r *Report) findingTable() (Table, bool) {
	t := Table{Title: "What the A/B shows", Header: []string{"", "answer", "detail"}}
	for _, f := range r.Findings {
		t.Rows = append(t.Rows, []string{f.Question, f.Answer, f.Detail})
	}
	return t, len(t.Rows) > 0
}
