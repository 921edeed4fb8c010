package analyze

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/internal/plotfile"
	"github.com/pi2hop/pi2hop/invoker"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/pi2hop/pi2hop/pcap/pcaptest"
)

// scenario is a synthetic hop run: packet i belongs to one of three flows
// and gets a fixed fate, so the expected counts follow from i alone.
type scenario struct{ n int }

const scenarioStart = int64(1_750_000_000) * 1e9

// flows: an L4S TCP flow (IPv4, ECT(1)), a classic ECN UDP flow (IPv6,
// ECT(0)) and a classic TCP flow without ECN (IPv4).
func (scenario) packet(i int) pcaptest.Packet {
	switch i % 3 {
	case 0:
		return pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 6, SPort: 40000, DPort: 443, ECN: aqm.ECT1, ID: uint32(i), Payload: 1200, Seq: uint32(i)}
	case 1:
		return pcaptest.Packet{Src: pcaptest.Cli6, Dst: pcaptest.Srv6, Proto: 17, SPort: 5004, DPort: 5004, ECN: aqm.ECT0, ID: 99, Payload: 800, Seq: uint32(i)}
	}
	return pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 6, SPort: 40001, DPort: 80, ECN: aqm.NotECT, ID: uint32(i), Payload: 1400, Seq: uint32(i)}
}

// fate is what the hop did with packet i.
func (scenario) fate(i int) (a pcap.Annotation, tap string) {
	a = pcap.Annotation{HasDecision: true, Sojourn: int64(i%7) * 1e6, Prob: uint32(i%5) << 28}
	a.Verdict.Action = aqm.Pass
	switch i % 3 {
	case 0:
		a.Class, a.ECNIn = aqm.L4S, aqm.ECT1
		switch i % 10 {
		case 0:
			a.Verdict = aqm.Verdict{Action: aqm.Mark, Reason: aqm.ReasonStep}
		case 3:
			a.Verdict = aqm.Verdict{Action: aqm.Mark, Reason: aqm.ReasonCoupled}
		}
	case 1:
		a.Class, a.ECNIn = aqm.Classic, aqm.ECT0
		if i%10 == 1 {
			a.Verdict = aqm.Verdict{Action: aqm.Mark, Reason: aqm.ReasonClassic}
		}
	case 2:
		a.Class, a.ECNIn = aqm.Classic, aqm.NotECT
		switch {
		case i%20 == 8:
			a.Verdict = aqm.Verdict{Action: aqm.Drop, Reason: aqm.ReasonLimit}
			a.Sojourn = 0
		case i%10 == 2:
			a.Verdict = aqm.Verdict{Action: aqm.Drop, Reason: aqm.ReasonClassic}
		}
	}
	a.Verdict.Class = a.Class
	if a.Verdict.Action == aqm.Drop {
		return a, "up-drop"
	}
	return a, "up-out"
}

// write records packets 0..n-1 on the up taps and one packet on down-in.
func (s scenario) write(tb testing.TB, path string) {
	c, err := pcap.NewCapture(path, pcap.Options{BufferRecords: 4096})
	if err != nil {
		tb.Fatal(err)
	}
	up := c.AddTaps("up")
	down := c.AddTaps("down")
	offer := func(iface int, at int64, pkt []byte, ann *pcap.Annotation) {
		for !c.Offer(iface, at, pkt, ann) {
			time.Sleep(100 * time.Microsecond) // the test wants every record
		}
	}
	for i := range s.n {
		tp := s.packet(i)
		pkt := tp.Build()
		at := scenarioStart + int64(i)*100_000 // 10 kpkt/s
		offer(up.In, at, pkt, &pcap.Annotation{Class: map[bool]aqm.Class{true: aqm.L4S}[tp.ECN == aqm.ECT1], ECNIn: tp.ECN})
		ann, tap := s.fate(i)
		if tap == "up-drop" {
			offer(up.Drop, at+ann.Sojourn, pkt, &ann)
			continue
		}
		if ann.Verdict.Action == aqm.Mark {
			pkt = pcaptest.SetCE(pkt)
		}
		offer(up.Out, at+ann.Sojourn+500_000, pkt, &ann)
	}
	offer(down.In, scenarioStart, pcaptest.Packet{Src: pcaptest.Srv4, Dst: pcaptest.Cli4, Proto: 6, SPort: 443, DPort: 40000, Payload: 0}.Build(), nil)
	if err := c.Close(); err != nil {
		tb.Fatal(err)
	}
}

func TestAnalyzeOwnCapture(t *testing.T) {
	s := scenario{n: 3000}
	path := filepath.Join(t.TempDir(), "hop.pcapng")
	s.write(t, path)

	// Expected counts, computed from the scenario's rules.
	var want [2]ClassResult
	for i := range want {
		want[i].DropsBy, want[i].MarksBy = map[string]uint64{}, map[string]uint64{}
	}
	var ceAdded, ect1Kept, ect0Kept, notKept uint64
	for i := range s.n {
		ann, tap := s.fate(i)
		length := uint64(len(s.packet(i).Build()))
		w := &want[classIndex(ann.Class)]
		w.In++
		w.InBytes += length
		w.Annotated++
		if tap == "up-drop" {
			w.Dropped++
			w.DropsBy[ann.Verdict.Reason.String()]++
			continue
		}
		w.Sent++
		w.SentBytes += length
		if ann.Verdict.Action == aqm.Mark {
			w.Marked++
			w.MarksBy[ann.Verdict.Reason.String()]++
			ceAdded++
			continue
		}
		switch ann.ECNIn {
		case aqm.ECT1:
			ect1Kept++
		case aqm.ECT0:
			ect0Kept++
		default:
			notKept++
		}
	}

	res, err := Analyze([]Input{{Path: path}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	up := res.Direction("up")
	if up == nil || res.Direction("down") == nil {
		t.Fatalf("directions %v, want up and down", res.Directions)
	}
	for cls, c := range up.Classes {
		w := want[cls]
		if c.In != w.In || c.InBytes != w.InBytes || c.Sent != w.Sent || c.SentBytes != w.SentBytes ||
			c.Marked != w.Marked || c.Dropped != w.Dropped || c.Annotated != w.Annotated {
			t.Errorf("class %s: got in %d/%dB sent %d/%dB marked %d dropped %d annotated %d,\n"+
				"want in %d/%dB sent %d/%dB marked %d dropped %d annotated %d", c.Class,
				c.In, c.InBytes, c.Sent, c.SentBytes, c.Marked, c.Dropped, c.Annotated,
				w.In, w.InBytes, w.Sent, w.SentBytes, w.Marked, w.Dropped, w.Annotated)
		}
		if !mapsEqual(c.DropsBy, w.DropsBy) || !mapsEqual(c.MarksBy, w.MarksBy) {
			t.Errorf("class %s: drops %v marks %v, want %v %v", c.Class, c.DropsBy, c.MarksBy, w.DropsBy, w.MarksBy)
		}
		if c.Sojourn.Count != int(w.Sent) || c.Sojourn.Max != 6 || !nearSketch(c.Sojourn.P50, 3) {
			t.Errorf("class %s sojourn %+v, want %d samples, p50 3ms (within %g), max 6ms", c.Class, c.Sojourn, w.Sent, SketchAccuracy)
		}
		// Out is 0.5 ms after dequeue in this scenario.
		if c.Transit.Count != int(w.Sent) || c.Transit.Max != 6.5 {
			t.Errorf("class %s transit %+v, want %d samples, max 6.5ms", c.Class, c.Transit, w.Sent)
		}
	}
	wantTrans := map[string]uint64{"ECT(1)→ECT(1)": ect1Kept, "ECT(0)→ECT(0)": ect0Kept, "Not-ECT→Not-ECT": notKept}
	var gotCE uint64
	for _, tr := range up.Transitions {
		if !tr.Valid {
			t.Errorf("invalid transition %+v in a clean capture", tr)
		}
		if tr.To == "CE" {
			gotCE += tr.Packets
			continue
		}
		if wantTrans[tr.From+"→"+tr.To] != tr.Packets {
			t.Errorf("transition %s→%s: %d, want %d", tr.From, tr.To, tr.Packets, wantTrans[tr.From+"→"+tr.To])
		}
	}
	if gotCE != ceAdded || up.InvalidTransitions != 0 {
		t.Errorf("→CE transitions %d, want %d; invalid %d", gotCE, ceAdded, up.InvalidTransitions)
	}
	if up.Matched != uint64(s.n) || up.UnmatchedIn != 0 || up.UnmatchedOut != 0 || len(up.ChecksumErrors) != 0 {
		t.Errorf("matched %d unmatched in %d out %d checksum errors %v; want %d 0 0 none",
			up.Matched, up.UnmatchedIn, up.UnmatchedOut, up.ChecksumErrors, s.n)
	}
	if len(up.Flows) != 3 {
		t.Fatalf("%d flows, want 3", len(up.Flows))
	}
	for _, f := range up.Flows {
		in, out := f.In.Total(), f.Out.Total()
		if in.Packets != out.Packets+f.Dropped || in.Packets != uint64(s.n/3) {
			t.Errorf("flow %s: in %d, out %d + dropped %d, want %d in", f.Flow, in.Packets, out.Packets, f.Dropped, s.n/3)
		}
		if f.Out.CE.Packets != f.Marked {
			t.Errorf("flow %s: %d CE out, %d marked", f.Flow, f.Out.CE.Packets, f.Marked)
		}
	}
	// 3000 packets at 10 kpkt/s, plus sojourn: 1 s bins from the epoch.
	if n := len(up.Bins); n != 1 {
		t.Errorf("%d bins for 0.3 s of traffic, want 1", n)
	}
	var binSent, binMarked uint64
	for _, b := range up.Bins {
		for _, c := range b.Classes {
			binSent += c.Sent
			binMarked += c.Marked
		}
	}
	if binSent != want[0].Sent+want[1].Sent || binMarked != want[0].Marked+want[1].Marked {
		t.Errorf("bins count %d sent, %d marked; want %d, %d", binSent, binMarked, want[0].Sent+want[1].Sent, want[0].Marked+want[1].Marked)
	}
	cp := up.Coupling
	wantPL := float64(want[1].Marked) / float64(want[1].Sent+want[1].Dropped)
	if !cp.Defined || cp.PL != wantPL || cp.K != 2 {
		t.Errorf("coupling %+v, want p_L %v, k 2", cp, wantPL)
	}
	// Tail drops are not the AQM's signal.
	wantPC := float64(want[0].Marked+want[0].DropsBy["classic"]) / float64(want[0].Sent+want[0].Dropped)
	if cp.PC != wantPC {
		t.Errorf("p_C %v, want %v", cp.PC, wantPC)
	}

	// The result marshals, and the table names what matters.
	if _, err := json.Marshal(res); err != nil {
		t.Fatal(err)
	}
	var tbl bytes.Buffer
	if err := res.WriteTable(&tbl); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"== direction up ==", "coupling (k=2)", "ECT(1)→CE", "udp [fd00::1]:5004 > [fd00:1::1]:5004"} {
		if !strings.Contains(tbl.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tbl.String())
		}
	}
}

func mapsEqual(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestWritePlots(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hop.pcapng")
	scenario{n: 300}.write(t, path)
	res, err := Analyze([]Input{{Path: path}}, Options{Bin: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Direction("up").Bins); n < 3 {
		t.Fatalf("%d bins of 10ms over 30ms, want at least 3", n)
	}
	for _, tt := range []struct {
		formats plotfile.Formats
		want    []string
	}{
		// The scenario's sojourns are all up: down has no CCDF.
		{nil, []string{"up-marking.png", "up-marking.svg", "up-sojourn.png", "up-sojourn.svg", "up-sojourn-ccdf.png",
			"up-sojourn-ccdf.svg", "down-marking.png", "down-marking.svg", "down-sojourn.png", "down-sojourn.svg"}},
		{plotfile.Formats{"svg"}, []string{"up-marking.svg", "up-sojourn.svg", "up-sojourn-ccdf.svg", "down-marking.svg", "down-sojourn.svg"}},
	} {
		dir := filepath.Join(t.TempDir(), "plots")
		files, err := res.WritePlots(dir, tt.formats, invoker.User{})
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != len(tt.want) {
			t.Errorf("formats %v: plots %v, want %v", tt.formats, files, tt.want)
		}
		for _, w := range tt.want {
			if !slices.Contains(files, filepath.Join(dir, w)) {
				t.Errorf("formats %v: %s not written (%v)", tt.formats, w, files)
			}
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			png, svg := bytes.HasPrefix(b, []byte("\x89PNG")), bytes.Contains(b[:min(len(b), 512)], []byte("<svg"))
			if (filepath.Ext(f) == ".png" && !png) || (filepath.Ext(f) == ".svg" && !svg) {
				t.Errorf("%s is not what its name says", f)
			}
			// Series strokes are the lab report's class colours (L4S
			// blue, Classic vermillion); black and grey are axes and grid.
			if svg && strings.HasPrefix(filepath.Base(f), "up-") {
				strokes := map[string]bool{}
				for _, m := range regexp.MustCompile(`stroke:(#[0-9A-Fa-f]{6})`).FindAllStringSubmatch(string(b), -1) {
					strokes[strings.ToUpper(m[1])] = true
				}
				delete(strokes, "#000000")
				delete(strokes, "#808080")
				if len(strokes) != 2 || !strokes["#0072B2"] || !strokes["#D55E00"] {
					t.Errorf("%s: series strokes %v, want #0072B2 (L) and #D55E00 (C)", f, strokes)
				}
				// Each legend entry is its line's thumbnail, then its text.
				legend := regexp.MustCompile(`stroke:(#[0-9A-Fa-f]{6})[^"]*" />\s*<text[^>]*>([LC]) `)
				entries := legend.FindAllStringSubmatch(string(b), -1)
				if len(entries) < 2 {
					t.Errorf("%s: %d legend entries of L and C, want 2 or more", f, len(entries))
				}
				for _, m := range entries {
					if want := map[string]string{"L": "#0072B2", "C": "#D55E00"}[m[2]]; strings.ToUpper(m[1]) != want {
						t.Errorf("%s: %s series drawn in %s, want %s", f, m[2], m[1], want)
					}
				}
			}
		}
	}
}

func TestAnalyzeOptionsRejected(t *testing.T) {
	for _, opt := range []Options{{Bin: time.Nanosecond}, {CouplingK: -1}, {CouplingK: 300}} {
		if _, err := New(opt); err == nil {
			t.Errorf("New(%+v) accepted", opt)
		}
	}
	if _, err := Analyze([]Input{{Path: filepath.Join(t.TempDir(), "missing.pcap")}}, Options{}); err == nil || !strings.Contains(err.Error(), "missing.pcap") {
		t.Errorf("missing file: %v", err)
	}
	junk := filepath.Join(t.TempDir(), "junk.pcap")
	os.WriteFile(junk, []byte("this is not a capture file at all"), 0o644)
	if _, err := Analyze([]Input{{Path: junk}}, Options{}); err == nil || !strings.Contains(err.Error(), "not a pcap or pcapng") {
		t.Errorf("junk file: %v", err)
	}
}

// nearSketch reports whether a percentile from a sketch is within its
// stated relative error of the exact value (and half a ns of rounding).
func nearSketch(got, exact float64) bool {
	return math.Abs(got-exact) <= SketchAccuracy*math.Abs(exact)+0.5e-6
}

// TestFlowChangesClass: a flow whose first packets are Not-ECT and whose
// later ones are ECT(1) is listed as both classes, in that order, with its
// packets counted under each.
func TestFlowChangesClass(t *testing.T) {
	for _, tt := range []struct {
		name string
		ecns []aqm.ECN
		want string
	}{
		{"classic then L4S", []aqm.ECN{aqm.NotECT, aqm.NotECT, aqm.ECT1}, "C+L"},
		{"L4S then classic", []aqm.ECN{aqm.ECT1, aqm.NotECT}, "L+C"},
		{"L4S only", []aqm.ECN{aqm.ECT1, aqm.ECT1}, "L"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hop.pcapng")
			c, err := pcap.NewCapture(path, pcap.Options{BufferRecords: 64})
			if err != nil {
				t.Fatal(err)
			}
			up := c.AddTaps("up")
			for i, e := range tt.ecns {
				pkt := pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 17, SPort: 5000, DPort: 6000, ECN: e, ID: uint32(i), Payload: 100, Seq: uint32(i)}.Build()
				at := scenarioStart + int64(i)*1_000_000
				for _, iface := range []int{up.In, up.Out} {
					if !c.Offer(iface, at, pkt, nil) {
						t.Fatal("capture refused a record")
					}
					at += 100_000
				}
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			res, err := Analyze([]Input{{Path: path}}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			d := res.Direction("up")
			if d == nil || len(d.Flows) != 1 {
				t.Fatalf("want one flow up, got %+v", d)
			}
			if f := d.Flows[0]; f.Class != tt.want || f.In.Total().Packets != uint64(len(tt.ecns)) {
				t.Errorf("flow class %q with %d packets in, want %q with %d", f.Class, f.In.Total().Packets, tt.want, len(tt.ecns))
			}
		})
	}
}
