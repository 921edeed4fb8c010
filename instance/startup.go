package instance

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/shaper"
)

// Log formats: what an instance writes its log lines as.
const (
	LogText = "text" // key=value lines, and the start-up message as a few lines a person reads
	LogJSON = "json" // one JSON object per line, the start-up record among them
)

// LogFormats are the accepted --log-format values.
var LogFormats = []string{LogText, LogJSON}

// summarizer is a topology that tells a person where it is: its own
// lines of the start-up message (addresses, devices) and how to stop it.
type summarizer interface {
	Summary() (lines []string, stop string)
}

// newLogger makes the instance's logger in format, and says whether the
// structured start-up record goes out at info level: in JSON, and when
// stderr is the systemd journal (JOURNAL_STREAM), which keeps records.
func newLogger(w io.Writer, format string, level slog.Level) (*slog.Logger, bool) {
	opts := &slog.HandlerOptions{Level: level}
	if format == LogJSON {
		return slog.New(slog.NewJSONHandler(w, opts)), true
	}
	return slog.New(slog.NewTextHandler(w, opts)), os.Getenv("JOURNAL_STREAM") != ""
}

// startupExtras are the parts of an instance in force beside its link:
// each is "" when not given and then left out of the start-up message.
type startupExtras struct {
	Profile string // --profile
	Config  string // --config: the configuration file read
	Capture string // the capture file's path
	Metrics string // the metrics URL
	Web     string // the live view's URL, with its token
}

// extrasFrom reads the profile, the configuration file and the capture's path from the start-up
// record's fields (key, value pairs).
func extrasFrom(attrs []any) startupExtras {
	var e startupExtras
	for i := 0; i+1 < len(attrs); i += 2 {
		v, _ := attrs[i+1].(string)
		switch attrs[i] {
		case "profile":
			e.Profile = v
		case "config":
			e.Config = v
		case "capture":
			e.Capture = v
		}
	}
	return e
}

// startupMessage is the start-up message a person reads: what is in
// force that differs from the defaults, where the sides are, how to see
// stats and stop, e.g.
//
//	pi2hop shell "pi2hop": 10mbit up/down, delay 10ms, jitter 4ms uniform, dualpi2
//	shell side 10.254.1.2 / fd00:254:1::2 (namespace pi2hop-shell)
//	the command reaches this host at 10.254.1.1 / fd00:254:1::1: $PI2HOP_HOST, $PI2HOP_HOST6
//	stats: pi2hop stats   stop: exit the shell (or Ctrl-C)
//
// When the directions differ, each gets a line of its own.
func startupMessage(kind, name string, c hop.Config, s Settings, x startupExtras, topo Topology) string {
	var b strings.Builder
	label := "pi2hop " + kind
	if name != "" {
		label += fmt.Sprintf(" %q", name)
	}
	head := []string{}
	if x.Config != "" {
		head = append(head, "config "+x.Config)
	}
	if x.Profile != "" {
		head = append(head, "profile "+x.Profile)
	}
	up, down := dirWords(c.Up, s, "up"), dirWords(c.Down, s, "down")
	same := slices.Equal(up, down)
	if same {
		up[0] += " up/down"
		head = append(head, up...)
	}
	head = append(head, c.Up.Queue.Kind)
	fmt.Fprintf(&b, "%s: %s\n", label, strings.Join(head, ", "))
	if !same {
		fmt.Fprintf(&b, "  up:   %s\n", strings.Join(up, ", "))
		fmt.Fprintf(&b, "  down: %s\n", strings.Join(down, ", "))
	}
	stop := "Ctrl-C"
	if sum, ok := topo.(summarizer); ok {
		var lines []string
		lines, stop = sum.Summary()
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
	}
	if x.Capture != "" {
		fmt.Fprintf(&b, "capture: %s\n", x.Capture)
	}
	if x.Metrics != "" {
		fmt.Fprintf(&b, "metrics: %s\n", x.Metrics)
	}
	if x.Web != "" {
		fmt.Fprintf(&b, "live view: %s\n", x.Web)
	}
	stats := "pi2hop stats"
	if name != "" && name != DefaultName {
		stats += " --name " + name
	}
	if name != "" {
		fmt.Fprintf(&b, "stats: %s   stop: %s\n", stats, stop)
	} else {
		fmt.Fprintf(&b, "stop: %s\n", stop)
	}
	return b.String()
}

// dirWords describes one direction's link: its rate always, then each
// of delay, loss, jitter, aggregation and ECN fault that is in force.
func dirWords(d hop.DirConfig, s Settings, dir string) []string {
	l := d.Link
	w := []string{rateWords(l.Rate, traceName(s, dir))}
	if l.Delay != 0 {
		w = append(w, "delay "+time.Duration(l.Delay).String())
	}
	if l.Loss != nil {
		w = append(w, fmt.Sprint("loss ", l.Loss))
	}
	if l.Jitter.Amount != 0 {
		w = append(w, "jitter "+l.Jitter.String())
	}
	if l.Aggregate.On() {
		w = append(w, "aggregate "+l.Aggregate.String())
	}
	if l.Fault.Kind != shaper.FaultNone {
		w = append(w, faultWords(l.Fault))
	}
	return w
}

// rateWords is a rate as a person reads it: "10mbit", or a trace by the
// name it was given.
func rateWords(r shaper.Rate, trace string) string {
	if _, ok := r.(shaper.Const); !ok && trace != "" {
		return "rate trace " + trace
	}
	return fmt.Sprint(r)
}

// traceName is the rate trace a direction was given, "" for none.
func traceName(s Settings, dir string) string {
	t := s.RateTrace
	if dir == "up" && s.UpRateTrace != nil {
		t = s.UpRateTrace
	}
	if dir == "down" && s.DownRateTrace != nil {
		t = s.DownRateTrace
	}
	if t == nil {
		return ""
	}
	return *t
}

// faultWords names an ECN path fault with where it acts: "ECN fault
// bleach before the queue", "ECN fault ce-bleach,share=50% after the queue".
func faultWords(f shaper.Fault) string {
	spec, where := f.String(), "before"
	if f.After { // String puts the bare ",after" right after the kind
		k := f.Kind.String()
		spec, where = k+strings.TrimPrefix(spec[len(k):], ",after"), "after"
	}
	return "ECN fault " + spec + " " + where + " the queue"
}

// Summary is the shell's lines of the start-up message: both sides'
// addresses, and the variables the command finds them in.
func (t *Shell) Summary() ([]string, string) {
	p := t.pair
	stop := "the command ends (or Ctrl-C)"
	if len(t.Args) == 1 && isShell(t.Args[0]) {
		stop = "exit the shell (or Ctrl-C)"
	}
	return []string{
		fmt.Sprintf("shell side %s / %s (namespace %s): $PI2HOP_ADDR, $PI2HOP_ADDR6, $PI2HOP_NETNS", p.ClientAddr, p.ClientAddr6, p.ClientNS),
		fmt.Sprintf("the command reaches this host at %s / %s: $PI2HOP_HOST, $PI2HOP_HOST6", p.ServerAddr, p.ServerAddr6),
		"the command runs as " + t.who()}, stop
}

// isShell reports whether path names a login shell, the default command.
func isShell(path string) bool {
	base := path[strings.LastIndex(path, "/")+1:]
	switch base {
	case "sh", "bash", "zsh", "fish", "dash", "ksh", "tcsh", "csh":
		return true
	}
	return false
}

// Summary is the gateway's lines of the start-up message.
func (t *Gateway) Summary() ([]string, string) {
	return append([]string{fmt.Sprintf("clients on %s (up goes out), network on %s (down comes in)", t.g.LAN, t.g.WAN)},
		acceptedLines(t.g)...), "Ctrl-C"
}

// Summary is the share's lines of the start-up message.
func (t *Share) Summary() ([]string, string) {
	return append([]string{fmt.Sprintf("LAN %s: %s, this box %s (DHCP, DNS); Internet via %s", t.g.LAN, t.sh.Subnet, t.sh.Router, t.g.WAN)},
		acceptedLines(t.g)...), "Ctrl-C"
}
