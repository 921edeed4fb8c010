package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/internal/tty"
)

// replay prints a table on a terminal and JSON lines into a pipe or a
// file, or with --json anywhere.
func TestReplayTableOnATerminal(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "t.csv")
	var csv strings.Builder
	csv.WriteString("time_ns,bytes,ecn,flow\n")
	for i := range 3000 {
		fmt.Fprintf(&csv, "%d,1500,%d,%d\n", i*400_000, 1+i%2, i%2) // 30 Mbit/s offered, half ECT(1), half ECT(0)
	}
	if err := os.WriteFile(trace, []byte(csv.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"replay", "--trace", trace, "--rate", "10mbit"}

	out := runOnPTY(t, args)
	for _, want := range []string{"queue  arrivals  sent  marked  dropped  sojourn p50", "\n      C      1500 ", "\n      L      1500 ",
		"3000 packets, link busy", "config: trace " + trace + ", rate 10mbit"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal: %q not in:\n%s", want, out)
		}
	}
	if strings.Contains(out, `{"type"`) {
		t.Errorf("terminal: JSON lines on a terminal:\n%s", out)
	}

	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if err := Run(context.Background(), args, strings.NewReader(""), file, io.Discard); err != nil {
		t.Fatalf("replay into a file: %v", err)
	}
	fileText, _ := os.ReadFile(file.Name())
	var pipe bytes.Buffer
	if err := Run(context.Background(), args, strings.NewReader(""), &pipe, io.Discard); err != nil {
		t.Fatalf("replay into a pipe: %v", err)
	}
	for name, text := range map[string]string{
		"a file": string(fileText), "a pipe": pipe.String(), "--json on a terminal": runOnPTY(t, append(args, "--json")),
	} {
		lines := strings.Split(strings.TrimSpace(text), "\n")
		var last map[string]any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last["type"] != "summary" || len(lines) < 3000 {
			t.Errorf("%s: %d lines, the last %q: want JSON lines, a summary last", name, len(lines), lines[len(lines)-1])
		}
	}
}

// runOnPTY runs pi2hop with args, its stdout a terminal, and returns what
// it printed there (the terminal's \r\n as \n).
func runOnPTY(t *testing.T, args []string) string {
	t.Helper()
	ptm, pts, err := tty.OpenPTY()
	if err != nil {
		t.Fatal(err)
	}
	defer ptm.Close()
	read := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(ptm); read <- b }() // ends with EIO once the terminal side is closed
	err = Run(context.Background(), args, strings.NewReader(""), pts, io.Discard)
	pts.Close()
	out := strings.ReplaceAll(string(<-read), "\r\n", "\n")
	if err != nil {
		t.Fatalf("%q on a terminal: %v", args, err)
	}
	return out
}
