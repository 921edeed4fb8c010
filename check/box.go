package check

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// BoxOptions say what the box doctor looks at.
type BoxOptions struct {
	NS       string // the network namespace to look at; "" = this process's
	LAN, WAN string // the interfaces pi2hop is to forward between; "" when not given
	Rate     uint64 // the rate pi2hop is to run at, bit/s; 0 when not given
	// WakeFor is how long the wake-up probe runs; 0 leaves it out.
	WakeFor time.Duration
}

// The status of a finding.
const (
	OK      = "ok"
	Problem = "problem" // stops or skews a run: fix it first
	Note    = "note"    // worth knowing; run and share handle it, or it depends on the test
)

// Finding is one check of the box.
type Finding struct {
	Check  string `json:"check"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Problems counts the findings that are problems.
func Problems(fs []Finding) int {
	n := 0
	for _, f := range fs {
		if f.Status == Problem {
			n++
		}
	}
	return n
}

// WriteBoxText prints the findings as a table, each problem's fix below it.
func WriteBoxText(w io.Writer, fs []Finding) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "check\tstatus\tdetail")
	for _, f := range fs {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Check, f.Status, f.Detail)
		if f.Fix != "" {
			fmt.Fprintf(tw, "\t\t  fix: %s\n", f.Fix)
		}
	}
	tw.Flush()
	if n := Problems(fs); n > 0 {
		fmt.Fprintf(&b, "\n%d problem(s): this box is not ready to be the bottleneck\n", n)
	} else {
		b.WriteString("\nno problems found\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// BoxJSON is what `check --box --json` prints.
type BoxJSON struct {
	Problems int       `json:"problems"`
	Findings []Finding `json:"findings"`
}

// iface names an interface in a fix, or a placeholder when not given.
func iface(name, placeholder string) string {
	if name == "" {
		return placeholder
	}
	return name
}
