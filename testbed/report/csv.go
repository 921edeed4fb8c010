package report

import (
	"encoding/csv"
	"io"
	"strconv"
)

// CSVFile is the report folder's table for a spreadsheet.
const CSVFile = "summary.csv"

// csvWords are summary.csv's first columns: what each run was.
var csvWords = []struct {
	key string
	f   func(r *Report, run *Run) string
}{
	{"scenario", func(r *Report, _ *Run) string { return r.Scenario }},
	{"run", func(_ *Report, run *Run) string { return run.Name }},
	{"title", func(_ *Report, run *Run) string { return run.Title }},
	{"aqm", func(_ *Report, run *Run) string { return run.AQM }},
	{"buffer", func(_ *Report, run *Run) string { return run.Buffer }},
	{"ecn_fault", func(_ *Report, run *Run) string { return run.ECNFault }},
	{"call_ecn", func(_ *Report, run *Run) string {
		if run.Call == nil {
			return ""
		}
		return run.Call.ECN
	}},
	{"error", func(_ *Report, run *Run) string { return run.Error }},
}

// CSV writes summary.csv: a header, then one row per run with the words
// of csvWords and every figure of Metrics and of each flow that some run
// has (a column no run has is left out; a cell the run lacks is empty).
// Numbers are plain (no units, no thousands separator, '.' decimal).
func (r *Report) CSV(out io.Writer) error {
	ms := allMetrics(r)
	w := csv.NewWriter(out)
	head := make([]string, 0, len(csvWords)+len(ms))
	for _, c := range csvWords {
		head = append(head, c.key)
	}
	for _, m := range ms {
		head = append(head, m.Key)
	}
	if err := w.Write(head); err != nil {
		return err
	}
	for i := range r.Runs {
		run := &r.Runs[i]
		row := make([]string, 0, len(head))
		for _, c := range csvWords {
			row = append(row, c.f(r, run))
		}
		for _, m := range ms {
			cell := ""
			if v, ok := m.Value(r, run); ok {
				cell = strconv.FormatFloat(v, 'g', 6, 64)
			}
			row = append(row, cell)
		}
		if err := w.Write(row); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}
