package replay

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// readAll reads every packet of src, copying frames (a Source may reuse them).
func readAll(t *testing.T, src Source) []Packet {
	t.Helper()
	var got []Packet
	for {
		var p Packet
		ok, err := src.Next(&p)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return got
		}
		p.Frame = bytes.Clone(p.Frame)
		got = append(got, p)
	}
}

// TestCSVTraceForms: columns in any order, CRLF, spaces, comments, no
// trailing newline.
func TestCSVTraceForms(t *testing.T) {
	in := "# a comment\r\n flow , ecn,time_ns,bytes\r\n7, 1, 0, 1500\r\n\r\n9,0,10,40"
	got := readAll(t, NewCSVSource(strings.NewReader(in), "t.csv"))
	want := []Packet{{Time: 0, Len: 1500, ECN: 1, Flow: 7}, {Time: 10, Len: 40, ECN: 0, Flow: 9}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// TestCSVErrors: bad rows name the file, the line and the column.
func TestCSVErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"time_ns,bytes,ecn\n0,1500,1\n5,1500,7\n", `t.csv:3: column "ecn": "7" is not an ECN value 0..3`},
		{"time_ns,bytes,ecn\n0,0,1\n", `t.csv:2: column "bytes": "0" is not a packet size 1..65535`},
		{"time_ns,bytes,ecn\n0,70000,1\n", `t.csv:2: column "bytes": "70000" is not a packet size`},
		{"time_ns,bytes,ecn\n-5,100,1\n", `t.csv:2: column "time_ns": "-5" is not a time in ns`},
		{"time_ns,bytes,ecn\n10,100,1\n# comment\n\n5,100,1\n", `t.csv:5: column "time_ns": 5 is before the previous row's 10`},
		{"time_ns,bytes,ecn,flow\n0,100,1,x\n", `t.csv:2: column "flow": "x" is not a flow id`},
		{"time_ns,bytes,ecn\n0,100\n", `t.csv:2: 2 fields, want 3 as in the header`},
		{"time,bytes,ecn\n", `t.csv:1: unknown column "time" in the header`},
		{"time_ns,bytes\n", `t.csv:1: header "time_ns,bytes" has no column "ecn"`},
		{"time_ns,bytes,ecn,ecn\n", `t.csv:1: column "ecn" appears twice`},
		{"", `t.csv: empty trace`},
	}
	for _, tt := range tests {
		src := NewCSVSource(strings.NewReader(tt.in), "t.csv")
		var err error
		for ok := true; ok && err == nil; {
			var p Packet
			ok, err = src.Next(&p)
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want %q", tt.in, err, tt.want)
		}
	}
	long := "time_ns,bytes,ecn\n" + strings.Repeat("0", 70<<10) + ",1,1\n"
	var p Packet
	if _, err := NewCSVSource(strings.NewReader(long), "t.csv").Next(&p); err == nil || !strings.Contains(err.Error(), "t.csv:2: line longer than") {
		t.Errorf("long line: %v", err)
	}
	if _, err := NewCSVSource(iotestErr{}, "t.csv").Next(&p); err == nil || !errors.Is(err, errRead) {
		t.Errorf("read error: %v", err)
	}
}

var errRead = errors.New("read failed")

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errRead }

func TestParseDecimal(t *testing.T) {
	tests := []struct {
		in   string
		max  uint64
		want uint64
		ok   bool
	}{
		{"0", 3, 0, true}, {"3", 3, 3, true}, {"4", 3, 0, false}, {"7", 3, 0, false},
		{"65535", 65535, 65535, true}, {"65536", 65535, 0, false},
		{"18446744073709551615", 1<<64 - 1, 1<<64 - 1, true}, {"18446744073709551616", 1<<64 - 1, 0, false},
		{"", 9, 0, false}, {"1x", 9, 0, false}, {"+1", 9, 0, false},
	}
	for _, tt := range tests {
		got, ok := parseDecimal([]byte(tt.in), tt.max)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseDecimal(%q, %d) = %d, %v; want %d, %v", tt.in, tt.max, got, ok, tt.want, tt.ok)
		}
	}
}

// The optional dscp column (0..63) reaches the packet, for NQB.
func TestCSVDSCP(t *testing.T) {
	got := readAll(t, NewCSVSource(strings.NewReader("time_ns,bytes,ecn,dscp\n0,100,0,45\n5,100,1,0\n"), "t.csv"))
	if len(got) != 2 || got[0].DSCP != 45 || got[1].DSCP != 0 {
		t.Errorf("got %+v, want DSCP 45 then 0", got)
	}
	_, err := NewCSVSource(strings.NewReader("time_ns,bytes,ecn,dscp\n0,100,0,64\n"), "t.csv").Next(new(Packet))
	if err == nil || !strings.Contains(err.Error(), `t.csv:2: column "dscp": "64" is not a DSCP 0..63`) {
		t.Errorf("DSCP 64: %v", err)
	}
}
