package main

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/analyze"
	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/pi2hop/pi2hop/pcap/pcaptest"
)

// ipv4Packet builds an IPv4/UDP packet, 10.0.0.1:5000 to 10.0.1.1:6000,
// of 128 bytes with a valid header checksum.
func ipv4Packet(ecn aqm.ECN, id uint16) []byte {
	return pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 17, SPort: 5000, DPort: 6000, ECN: ecn, ID: uint32(id), Payload: 100}.Build()
}

// writeHopCapture records 10 L4S packets through "up": 3 marked by the
// step AQM, 1 dropped for overload, the rest sent.
func writeHopCapture(t *testing.T, path string) {
	t.Helper()
	c, err := pcap.NewCapture(path, pcap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	taps := c.AddTaps("up")
	const t0 = int64(1_700_000_000e9)
	for i := range 10 {
		pkt := ipv4Packet(aqm.ECT1, uint16(i))
		at := t0 + int64(i)*1e6
		c.Offer(taps.In, at, pkt, nil)
		ann := &pcap.Annotation{Class: aqm.L4S, ECNIn: aqm.ECT1, Sojourn: 2e6, HasDecision: true}
		tap := taps.Out
		switch {
		case i < 3:
			ann.Verdict = aqm.Verdict{Action: aqm.Mark, Reason: aqm.ReasonStep, Class: aqm.L4S}
			pkt = pcaptest.SetCE(pkt)
		case i == 9:
			ann.Verdict = aqm.Verdict{Action: aqm.Drop, Reason: aqm.ReasonOverload, Class: aqm.L4S}
			tap = taps.Drop
		}
		c.Offer(tap, at+ann.Sojourn, pkt, ann)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestAnalyzeCommand(t *testing.T) {
	dir := t.TempDir()
	capture := filepath.Join(dir, "hop.pcapng")
	writeHopCapture(t, capture)

	out, err := runCLI(t, "", "analyze", "--json", "--bin", "5ms", capture)
	if err != nil {
		t.Fatal(err)
	}
	var res analyze.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, out)
	}
	if len(res.Directions) != 1 || res.BinMs != 5 {
		t.Fatalf("directions %d, bin %gms; want 1 and 5ms", len(res.Directions), res.BinMs)
	}
	l := res.Directions[0].Classes[1]
	if l.Class != "L" || l.In != 10 || l.Sent != 9 || l.Marked != 3 || l.Dropped != 1 ||
		l.MarksBy["step"] != 3 || l.DropsBy["overload"] != 1 ||
		math.Abs(l.Sojourn.P50-2) > analyze.SketchAccuracy*2 || l.Sojourn.RelativeError != analyze.SketchAccuracy {
		t.Errorf("L class %+v; want sojourn p50 2 ms within the sketch's relative error %g", l, analyze.SketchAccuracy)
	}

	table, err := runCLI(t, "", "analyze", capture)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"== direction up ==", "marks step=3; drops overload=1", "ECT(1)→CE 3"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}

	plots := filepath.Join(dir, "plots")
	if _, err := runCLI(t, "", "analyze", "--plot", plots, capture); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"up-marking.png", "up-sojourn.png", "up-marking.svg", "up-sojourn.svg"} {
		if fi, err := os.Stat(filepath.Join(plots, f)); err != nil || fi.Size() == 0 {
			t.Errorf("plot %s: %v", f, err)
		}
	}
	svgOnly := filepath.Join(dir, "svg")
	if _, err := runCLI(t, "", "analyze", "--plot", svgOnly, "--plot-format", "svg", capture); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(svgOnly, "up-marking.png")); err == nil {
		t.Error("--plot-format svg wrote a PNG")
	}
	if _, err := runCLI(t, "", "analyze", "--plot", svgOnly, "--plot-format", "jpg", capture); err == nil ||
		!strings.Contains(err.Error(), "plot-format") || !strings.Contains(err.Error(), "png,svg") {
		t.Errorf("--plot-format jpg: %v, want an error naming the flag and the accepted forms", err)
	}
}

func TestAnalyzeCommandErrors(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "notes.txt")
	os.WriteFile(junk, []byte("not a capture, just some text"), 0o644)
	good := filepath.Join(dir, "ok.pcapng")
	writeHopCapture(t, good)
	for _, tc := range []struct {
		args  []string
		want  string
		usage bool
	}{
		{[]string{"analyze"}, "name at least one capture FILE", true},
		{[]string{"analyze", filepath.Join(dir, "missing.pcap")}, "missing.pcap: no such file", false},
		{[]string{"analyze", dir}, "is a directory", false},
		{[]string{"analyze", junk}, "not a pcap or pcapng capture", false},
		{[]string{"analyze", "--bin", "0s", good}, "--bin 0s: must be at least 1µs", true},
		{[]string{"analyze", "--coupling", "0", good}, "--coupling 0", true},
		{[]string{"analyze", "--ingress", good}, "--ingress and --egress go together", true},
	} {
		_, err := runCLI(t, "", tc.args...)
		var ue *usageError
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.As(err, &ue) != tc.usage {
			t.Errorf("%q: error %v (usage error %v), want one containing %q (usage %v)", tc.args, err, errors.As(err, &ue), tc.want, tc.usage)
		}
	}
}
