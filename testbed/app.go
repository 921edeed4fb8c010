package testbed

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/testbed/report"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/invoker"
)

// AppConfig is `pi2hop lab app`: the WWDC23 session's A/B for the
// user's own app. Its client command (and server command, or the host's
// real servers through NAT) runs through each variant of the path in
// turn, beside the same cross traffic, and the report sets what the hop
// saw of the app's flows side by side.
type AppConfig struct {
	Client string `json:"client"`           // shell command line, run with sh -c in the client namespace
	Server string `json:"server,omitempty"` // "" with NAT: the app's servers are beyond the host
	NAT    bool   `json:"nat,omitempty"`
	// Variants are the paths the app meets, run in this order.
	Variants []AppVariant  `json:"variants"`
	Cross    int           `json:"cross"` // classic (cubic, Not-ECT) downloads beside the app
	Repeat   int           `json:"repeat"`
	RateBps  uint64        `json:"rate_bps"`
	RTT      time.Duration `json:"-"`
	// Warmup is how long the cross traffic runs alone before the client
	// starts: past slow start, as the session's downloads are.
	Warmup time.Duration `json:"-"`
	// Duration is the longest the client may run; it is stopped then.
	Duration time.Duration `json:"-"`
	Seed     uint64        `json:"seed"`
	// User runs the commands (the user behind sudo); nil runs them as
	// root (tests).
	User *invoker.User `json:"-"`
}

// AppVariant is one path the app meets: a name and the hop's
// configuration each way, from link flags as shell takes them.
type AppVariant struct {
	Name  string        `json:"name"`
	Flags string        `json:"flags"` // as given, for the report
	Title string        `json:"title"` // what the variant is, in words
	Up    hop.DirConfig `json:"-"`
	Down  hop.DirConfig `json:"-"`
}

// The built-in variants: DualPI2 passing ECN; the same DualPI2 behind a
// bleacher, so the app meets a path without L4S (its ECN validation
// should fall back); a tail-drop FIFO of 100 ms, the bufferbloated path.
const (
	VariantL4S     = "l4s"
	VariantClassic = "classic"
	VariantFIFO    = "fifo"
)

// DefaultAppVariants is what --variants means when not given.
var DefaultAppVariants = []string{VariantL4S, VariantClassic, VariantFIFO}

// fifoBuffer is the FIFO variant's buffer in time at the link's rate.
const fifoBuffer = 100 * time.Millisecond

// BuiltinAppVariant returns a built-in variant's link flags (as shell
// takes them) and title, at rate bit/s.
func BuiltinAppVariant(name string, rateBps uint64) (flags, title string, ok bool) {
	switch name {
	case VariantL4S:
		return "--aqm=dualpi2", "L4S path: DualPI2, ECN passes", true
	case VariantClassic:
		return "--aqm=dualpi2 --ecn-fault=bleach", "no L4S: DualPI2, ECN bleached before it", true
	case VariantFIFO:
		bytes := rateBps * uint64(fifoBuffer/time.Millisecond) / 8 / 1000
		return fmt.Sprintf("--aqm=fifo --memlimit=%d", max(bytes, 3000)), "no AQM: FIFO of 100 ms", true
	}
	return "", "", false
}

// Defaults of lab app, and what --quick makes them.
const (
	DefaultAppCross    = 4
	DefaultAppDuration = 30 * time.Second
	DefaultAppWarmup   = 3 * time.Second
	DefaultAppRate     = 10_000_000
	DefaultAppRTT      = 20 * time.Millisecond
)

var variantName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,15}$`)

// CheckVariantName says why name cannot name a variant (it names files).
func CheckVariantName(name string) error {
	if !variantName.MatchString(name) {
		return fmt.Errorf("variant name %q: want 1-16 of a-z, 0-9, - and _, starting with a letter or digit", name)
	}
	return nil
}

// Resolve fills c's zero fields from the defaults and checks the result.
func (c AppConfig) Resolve() (AppConfig, error) {
	if c.Cross < 0 {
		return c, fmt.Errorf("cross %d: want 0..32 downloads", c.Cross)
	}
	if c.RateBps == 0 {
		c.RateBps = DefaultAppRate
	}
	if c.RTT == 0 {
		c.RTT = DefaultAppRTT
	}
	if c.Duration == 0 {
		c.Duration = DefaultAppDuration
	}
	if c.Warmup == 0 {
		c.Warmup = DefaultAppWarmup
	}
	if c.Repeat == 0 {
		c.Repeat = 1
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	switch {
	case strings.TrimSpace(c.Client) == "":
		return c, errors.New("no client command")
	case c.Server != "" && c.NAT:
		return c, errors.New("a server command and NAT: the server is either in the lab's server namespace or beyond the host, not both")
	case len(c.Variants) == 0:
		return c, errors.New("no variants")
	case c.Cross > 32:
		return c, fmt.Errorf("cross %d: want 0..32 downloads", c.Cross)
	case c.Repeat < 1 || c.Repeat > maxRepeat:
		return c, fmt.Errorf("repeat %d: want 1..%d", c.Repeat, maxRepeat)
	case c.RateBps < 100_000:
		return c, fmt.Errorf("rate %d bit/s: want at least 100kbit", c.RateBps)
	case c.RTT < 0 || c.RTT > 2*time.Second:
		return c, fmt.Errorf("rtt %v: want 0..2s", c.RTT)
	case c.Duration < time.Second:
		return c, fmt.Errorf("duration %v: want at least 1s", c.Duration)
	}
	seen := map[string]bool{}
	for _, v := range c.Variants {
		if err := CheckVariantName(v.Name); err != nil {
			return c, err
		}
		if seen[v.Name] {
			return c, fmt.Errorf("variant %q twice", v.Name)
		}
		seen[v.Name] = true
	}
	return c, nil
}

// PlannedDuration estimates how long c takes at most: every variant runs
// the warm-up and the client's longest time, repeated (a variant ends
// sooner when its client does).
func (c AppConfig) PlannedDuration() time.Duration {
	per := c.Warmup + c.Duration + appSettle + drainTime + setupAllowance
	return per * time.Duration(len(c.Variants)*max(c.Repeat, 1))
}

// String is a one-line summary for the start-up line and the report.
func (c AppConfig) String() string {
	names := make([]string, len(c.Variants))
	for i, v := range c.Variants {
		names[i] = v.Name
	}
	return fmt.Sprintf("app: %s, RTT %v, variants %s, %d cross downloads, client up to %v after %v of cross traffic",
		fmtRate(float64(c.RateBps)), c.RTT, strings.Join(names, ","), c.Cross, c.Duration, c.Warmup)
}

// appSettle is how long a server command gets to open its sockets before
// the client starts.
const appSettle = 500 * time.Millisecond

// completeRuns are the repetitions that ran and in which the app did not
// fail, and the numbers (1-based) of the others; when none did, all of
// them, so the report still shows how it failed.
func completeRuns(reps []report.Run) (ok []report.Run, excluded []string) {
	for i, r := range reps {
		if r.App != nil && r.Error == "" && !r.App.Failed() {
			ok = append(ok, r)
		} else {
			excluded = append(excluded, fmt.Sprint(i+1))
		}
	}
	if len(ok) == 0 || len(reps) == 1 {
		return reps, nil
	}
	return ok, excluded
}

const appAbout = "Your own app's client (and server) commands, run in turn through each variant of the path " +
	"beside the same classic downloads: the A/B of Apple's WWDC23 L4S session for any app. " +
	"Its figures are what the hop saw of the app's flows: every flow of the lab's namespaces but the downloads."

func appNotes(c AppConfig) []string {
	n := []string{
		fmt.Sprintf("Each variant: a fresh hop at %s each way with %v base RTT (half each way); %d cubic downloads "+
			"(Not-ECT) run alone for %v, then the client starts and runs until it ends or for at most %v; the downloads stop with it.",
			fmtRate(float64(c.RateBps)), c.RTT, c.Cross, c.Warmup+appSettle, c.Duration),
		"The app's flows are every flow the hop forwarded but the downloads (TCP port " + fmt.Sprint(basePort-1) + " on the server). " +
			"Sent: the codepoints its packets reached the hop with; received: those they left it with.",
		"Goodput: the app's bytes the hop delivered each way over the client's run time.",
		"Queue figures (L / C sojourn) cover every packet of the variant from the client's start: the app's and the downloads'.",
		"The commands run as the user behind sudo, with sh -c, and find PI2HOP_SERVER, PI2HOP_CLIENT (and their 6 forms) " +
			"and PI2HOP_VARIANT in their environment.",
	}
	if c.NAT {
		n = append(n, "NAT: the client reaches the host's networks through the hop; the host masquerades it.")
	}
	return n
}

// appFindings states what the A/B shows, as plainly as the session
// does: did the app ask for L4S, did it gain, did it fall back.
func appFindings(r *report.Report) []report.Finding {
	l4s, classic := appRun(r, VariantL4S), appRun(r, VariantClassic)
	var fs []report.Finding
	if l4s != nil {
		share := l4s.App.ClientSent.L4SShare()
		fs = append(fs, report.Finding{Question: "the app sent ECT(1) on the l4s path", Answer: yesNo(share >= 0.5),
			Detail: fmt.Sprintf("%.0f %% of its client's packets reached the hop as ECT(1) or CE", 100*share)})
	}
	if l4s != nil && classic != nil {
		lr, cr := l4s.App.RTTMs, classic.App.RTTMs
		if lr != nil && cr != nil && lr.N > 0 && cr.N > 0 {
			fs = append(fs, report.Finding{Question: "the app's RTT p99 is lower on the l4s path than on classic",
				Answer: yesNo(lr.P99 < cr.P99), Detail: fmt.Sprintf("%.1f ms vs %.1f ms", lr.P99, cr.P99)})
		} else {
			fs = append(fs, report.Finding{Question: "the app's RTT p99 is lower on the l4s path than on classic",
				Answer: "unknown", Detail: "no passive RTT samples of the app's flows in one of the two"})
		}
		switch {
		case l4s.App.ClientSent.L4SShare() < 0.5:
			fs = append(fs, report.Finding{Question: "the app fell back to Classic when ECN was bleached", Answer: "not applicable",
				Detail: "it did not send ECT(1) on the l4s path"})
		default:
			// A flow that started ECT(1) and changed codepoint is an ECN
			// validation that gave up; a client that kept to ECT(1) did
			// not, whatever its packets became on the way.
			a := classic.App
			fs = append(fs, report.Finding{Question: "the app fell back to Classic when ECN was bleached", Answer: yesNo(a.FellBack > 0),
				Detail: fmt.Sprintf("%d flows changed codepoint; the client sent %s, the app's packets arrived %s",
					a.FellBack, a.ClientSent.Shares(), a.Received.Shares())})
		}
	}
	return fs
}

func appRun(r *report.Report, name string) *report.Run {
	for i := range r.Runs {
		if r.Runs[i].Name == name && r.Runs[i].App != nil {
			return &r.Runs[i]
		}
	}
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// appChecks holds the lab to what it can promise: every variant ran and
// the app did not fail in any (a non-zero exit of its own, or no start).
func appChecks(r *report.Report) []report.Check {
	var cs []report.Check
	for _, run := range r.Runs {
		switch {
		case run.App == nil:
			cs = append(cs, check("variant "+run.Name+" ran", false, "%s", run.Error))
		case run.App.Failed():
			detail := "client " + run.App.Client.String()
			if s := run.App.Server; s != nil {
				detail += ", server " + s.String()
			}
			cs = append(cs, check("variant "+run.Name+": the app did not fail", false, "%s", detail))
		case run.Error != "":
			cs = append(cs, check("variant "+run.Name+" ran", false, "%s", run.Error))
		default:
			cs = append(cs, check("variant "+run.Name+": the app did not fail", true, "client %s", run.App.Client.String()))
		}
	}
	return cs
}
