package instance

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/hop"
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

// startupMessage is the start-up message a person reads, e.g.
//
//	pi2hop shell "pi2hop": 10mbit up/down, delay 10ms, dualpi2
//	host side 10.254.1.1, shell side 10.254.1.2
//	stats: pi2hop stats   stop: exit the shell (or Ctrl-C)
func startupMessage(kind, name string, c hop.Config, topo Topology) string {
	var b strings.Builder
	label := "pi2hop " + kind
	if name != "" {
		label += fmt.Sprintf(" %q", name)
	}
	fmt.Fprintf(&b, "%s: %s\n", label, linkWords(c))
	stop := "Ctrl-C"
	if s, ok := topo.(summarizer); ok {
		var lines []string
		lines, stop = s.Summary()
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
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

// linkWords describes both directions in a few words: "10mbit up/down,
// delay 10ms, dualpi2" or "5mbit up, 20mbit down, delay 10ms up, 30ms
// down, loss 1%, fq_codel".
func linkWords(c hop.Config) string {
	var parts []string
	pair := func(what, up, down string, zero string) {
		switch {
		case up == down && up == zero:
		case up == down && what == "":
			parts = append(parts, up+" up/down")
		case up == down:
			parts = append(parts, what+" "+up)
		case what == "":
			parts = append(parts, up+" up, "+down+" down")
		default:
			parts = append(parts, what+" "+up+" up, "+down+" down")
		}
	}
	pair("", fmt.Sprint(c.Up.Link.Rate), fmt.Sprint(c.Down.Link.Rate), "")
	pair("delay", time.Duration(c.Up.Link.Delay).String(), time.Duration(c.Down.Link.Delay).String(), "0s")
	loss := func(d hop.DirConfig) string {
		if d.Link.Loss == nil {
			return "none"
		}
		return fmt.Sprint(d.Link.Loss)
	}
	pair("loss", loss(c.Up), loss(c.Down), "none")
	parts = append(parts, c.Up.Queue.Kind)
	return strings.Join(parts, ", ")
}

// Summary is the shell's lines of the start-up message.
func (t *Shell) Summary() ([]string, string) {
	p := t.pair
	stop := "the command ends (or Ctrl-C)"
	if len(t.Args) == 1 && isShell(t.Args[0]) {
		stop = "exit the shell (or Ctrl-C)"
	}
	return []string{fmt.Sprintf("host side %s, shell side %s (namespace %s)", p.ServerAddr, p.ClientAddr, p.ClientNS),
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
