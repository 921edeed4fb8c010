package check

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
)

// WritePath's JSON carries the trace inside the result; its text puts
// the trace, and the note of a fault on the way back, after the result.
func TestWritePath(t *testing.T) {
	r := &Result{Peer: netip.MustParseAddrPort("127.0.0.1:9332"), Probes: 25,
		Forward: Direction{Verdict: Verdict{Kind: Passes}}, Reverse: Direction{Verdict: Verdict{Kind: Bleached, Faults: []Fault{{Kind: Bleached, Detail: "ECT(1) arrived Not-ECT"}}}}}
	tr := &Trace{Peer: r.Peer, Changed: -1}
	var j strings.Builder
	if err := WritePath(&j, r, tr, true); err != nil {
		t.Fatal(err)
	}
	var got JSON
	if err := json.Unmarshal([]byte(j.String()), &got); err != nil || got.Trace == nil || strings.Count(j.String(), "\n") != 1 {
		t.Errorf("JSON %q (%v): want one line with the trace inside", j.String(), err)
	}
	var plain, text strings.Builder
	r.WriteText(&plain)
	tr.WriteText(&plain)
	if err := WritePath(&text, r, tr, false); err != nil {
		t.Fatal(err)
	}
	if want := plain.String() + "  " + TraceNote(r) + "\n"; TraceNote(r) == "" || text.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", text.String(), want)
	}
	text.Reset()
	WritePath(&text, r, nil, false)
	if plain.Reset(); r.WriteText(&plain) != nil || text.String() != plain.String() {
		t.Errorf("text without a trace:\n%s\nwant the result alone:\n%s", text.String(), plain.String())
	}
}

func TestWriteBox(t *testing.T) {
	fs := []Finding{{Check: "forwarding", Status: Problem, Detail: "off", Fix: "sysctl"}, {Check: "tun", Status: OK, Detail: "present"}}
	var j strings.Builder
	if err := WriteBox(&j, fs, true); err != nil {
		t.Fatal(err)
	}
	var got BoxJSON
	if err := json.Unmarshal([]byte(j.String()), &got); err != nil || got.Problems != 1 || len(got.Findings) != 2 {
		t.Errorf("JSON %q (%v): want 1 problem of 2 findings", j.String(), err)
	}
	var text, want strings.Builder
	WriteBox(&text, fs, false)
	WriteBoxText(&want, fs)
	if text.String() != want.String() {
		t.Errorf("text %q, want the table %q", text.String(), want.String())
	}
}
