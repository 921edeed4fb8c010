package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/invoker"
	"github.com/pi2hop/pi2hop/testbed/report"
	"github.com/spf13/pflag"
)

// labCompareWord is the word after lab that compares reports instead of
// running a scenario.
const labCompareWord = "compare"

// labCompare is `pi2hop lab compare DIR DIR... [--out DIR] [--plot-format F]`:
// the reports' runs side by side on the terminal, the plots and the
// tables (report.CompareFile) in a new folder. Of lab's flags only those
// two apply.
func labCompare(env *cmdEnv, fs *pflag.FlagSet, a *labArgs, dirs []string) error {
	var other []string
	fs.Visit(func(f *pflag.Flag) {
		if f.Name != "out" && f.Name != "plot-format" {
			other = append(other, "--"+f.Name)
		}
	})
	if len(other) > 0 {
		return usagef("lab compare: %s: only --out and --plot-format apply to a comparison", strings.Join(other, ", "))
	}
	if len(dirs) < 2 {
		return usagef("lab compare: want two or more report folders (each with report.json), got %d", len(dirs))
	}
	c, err := report.ReadComparison(dirs)
	if err != nil {
		return fmt.Errorf("lab compare: %w", err)
	}
	out := a.out
	if out == "" {
		out = "pi2hop-lab-compare-" + time.Now().Format("20060102-150405")
	}
	owner, err := invoker.FromEnv()
	if err != nil {
		return err
	}
	for _, t := range c.Tables() {
		if err := t.Text(env.stdout); err != nil {
			return err
		}
	}
	plots, err := c.Write(out, a.plotFormat, owner)
	if err != nil {
		return fmt.Errorf("lab compare: %w", err)
	}
	abs, _ := filepath.Abs(out)
	fmt.Fprintf(env.stdout, "Comparison: %s (%d plot files, %s)\n", filepath.Join(abs, report.CompareFile), len(plots), a.plotFormat)
	return nil
}
