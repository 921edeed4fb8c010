package analyze

import (
	"encoding/json"
	"io"
)

// Inputs lists one analysis's captures in the order Analyze reads them:
// those taken before the bottleneck (Role "in"), those whose interfaces
// name their role (pi2hop's taps, or one capture point), those taken
// after the bottleneck (Role "out").
func Inputs(ingress, files, egress []string) []Input {
	var in []Input
	for _, group := range []struct {
		files []string
		role  string
	}{{ingress, "in"}, {files, ""}, {egress, "out"}} {
		for _, f := range group.files {
			in = append(in, Input{Path: f, Role: group.role})
		}
	}
	return in
}

// Warnings says, one line each, what of each file could not be read.
func (r *Result) Warnings() []string {
	var ws []string
	for i := range r.Files {
		ws = append(ws, r.Files[i].Warnings()...)
	}
	return ws
}

// WriteJSON writes r as one indented JSON document (docs/json.md).
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
