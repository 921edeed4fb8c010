package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/internal/plotfile"
	"github.com/pi2hop/pi2hop/invoker"
)

// File names inside a report folder.
const (
	JSONFile     = "report.json"
	MarkdownFile = "report.md"
)

// Write creates the folder dir (it must not exist; its parent must) for
// owner and writes the plots (in each of formats; nil:
// plotfile.DefaultFormats), report.json, report.md and summary.csv into
// it, each a new file of owner's. r.Plots is set to the plot files written.
func (r *Report) Write(dir string, formats plotfile.Formats, owner invoker.User) error {
	if err := owner.Mkdir(dir, invoker.ModeDir); err != nil {
		return fmt.Errorf("report folder: %w", err)
	}
	plots, err := r.WritePlots(dir, formats, owner)
	r.Plots = plots
	if err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("report.json: %w", err)
	}
	if err := owner.WriteFile(filepath.Join(dir, JSONFile), append(js, '\n'), invoker.ModeReport); err != nil {
		return err
	}
	var md bytes.Buffer
	if err := r.Markdown(&md); err != nil {
		return err
	}
	if err := owner.WriteFile(filepath.Join(dir, MarkdownFile), md.Bytes(), invoker.ModeReport); err != nil {
		return err
	}
	return owner.WriteWith(filepath.Join(dir, CSVFile), invoker.ModeReport, r.CSV)
}

// Read parses dir/report.json. Config comes back as generic JSON values
// and the raw RTT samples are not kept, so plots cannot be redrawn from it.
func Read(dir string) (*Report, error) {
	b, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, JSONFile), err)
	}
	return &r, nil
}

// Markdown writes report.md: what ran, the tables, the plots, the notes
// and the full configuration.
func (r *Report) Markdown(out io.Writer) error {
	w := new(bytes.Buffer)
	fmt.Fprintf(w, "# pi2hop lab: %s\n\n", r.Title)
	quick := ""
	if r.Quick {
		quick = " · --quick durations"
	}
	fmt.Fprintf(w, "Scenario `%s` · started %s · took %s%s  \n", r.Scenario,
		r.Started.UTC().Format(time.RFC3339), time.Duration(r.ElapsedS*float64(time.Second)).Round(time.Second), quick)
	v := r.Versions
	fmt.Fprintf(w, "pi2hop %s · %s · %s %s\n\n", v.Pi2hop, v.Go, v.OS, v.Kernel)
	if r.About != "" {
		fmt.Fprintf(w, "%s\n\n", strings.Join(strings.Fields(r.About), " "))
	}

	fmt.Fprintf(w, "## Runs\n\n| run | bottleneck | rate (Mbit/s) | base RTT (ms) | traffic (s) | warm-up excluded (s) |\n|---|---|--:|--:|--:|--:|\n")
	for _, run := range r.Runs {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %.0f | %.0f |\n", run.Title, run.Buffer, mbit(run.RateBps), ms(run.BaseRTTMs), run.DurationS, run.WarmupS)
	}
	for _, run := range r.Runs {
		if run.Error != "" {
			fmt.Fprintf(w, "\n**%s failed:** %s\n", run.Title, run.Error)
		}
	}
	w.WriteString("\n## Results\n\n")
	for _, t := range r.Tables() {
		if err := t.Markdown(w); err != nil {
			return err
		}
	}
	if len(r.Plots) > 0 {
		w.WriteString("## Plots\n\n")
		writePlotLinks(w, r.Plots)
	}
	fmt.Fprintf(w, "Every run's figures, one row per run for a spreadsheet: [%s](%s).\n\n", CSVFile, CSVFile)
	if len(r.Notes) > 0 {
		w.WriteString("## Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
		w.WriteString("\n")
	}
	cfg, err := json.MarshalIndent(r.Config, "", "  ")
	if err != nil {
		return fmt.Errorf("report.md config: %w", err)
	}
	fmt.Fprintf(w, "## Configuration\n\n```json\n%s\n```\n", cfg)
	_, err = out.Write(w.Bytes())
	return err
}

// writePlotLinks shows each plot once, as its PNG (what every Markdown
// viewer shows) or its SVG when no PNG was written, with a link to the
// SVG copy.
func writePlotLinks(w *bytes.Buffer, plots []string) {
	files := map[string]bool{}
	var bases []string
	for _, p := range plots {
		files[p] = true
		base := strings.TrimSuffix(p, filepath.Ext(p))
		if len(bases) == 0 || bases[len(bases)-1] != base {
			bases = append(bases, base)
		}
	}
	for _, b := range bases {
		png, svg := b+".png", b+".svg"
		switch {
		case files[png] && files[svg]:
			fmt.Fprintf(w, "![%s](%s) ([SVG](%s))\n\n", b, png, svg)
		case files[png]:
			fmt.Fprintf(w, "![%s](%s)\n\n", b, png)
		case files[svg]:
			fmt.Fprintf(w, "![%s](%s)\n\n", b, svg)
		}
	}
}
