package check

import (
	"encoding/json"
	"fmt"
	"io"
)

// WritePath prints a path check's result, with its trace when tr is not
// nil: one JSON object (asJSON), or the tables and, beside the trace,
// what it cannot show (TraceNote).
func WritePath(w io.Writer, r *Result, tr *Trace, asJSON bool) error {
	if asJSON {
		j := r.JSON()
		if tr != nil {
			tj := tr.JSON()
			j.Trace = &tj
		}
		return writeJSON(w, j)
	}
	if err := r.WriteText(w); err != nil || tr == nil {
		return err
	}
	if err := tr.WriteText(w); err != nil {
		return err
	}
	if note := TraceNote(r); note != "" {
		_, err := fmt.Fprintf(w, "  %s\n", note)
		return err
	}
	return nil
}

// WriteBox prints the box's findings: BoxJSON (asJSON) or the table.
func WriteBox(w io.Writer, fs []Finding, asJSON bool) error {
	if asJSON {
		return writeJSON(w, BoxJSON{Problems: Problems(fs), Findings: fs})
	}
	return WriteBoxText(w, fs)
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
