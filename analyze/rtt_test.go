package analyze

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/invoker"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/pi2hop/pi2hop/pcap/pcaptest"
	"github.com/pi2hop/pi2hop/rtt"
)

// rttSeen is a packet captured by a tap at a time in ms after the start.
type rttSeen struct {
	atMs float64
	dir  string // up or down
	p    pcaptest.Packet
}

// writeRTTCapture writes packets to the in taps of their direction, and
// each again at the out tap 1 ms later: analyze must time an up packet
// at its in tap and a down one at its out tap, the hop's client-facing
// edge, as the hop's own table does.
func writeRTTCapture(t *testing.T, path string, seen []rttSeen) {
	t.Helper()
	c, err := pcap.NewCapture(path, pcap.Options{BufferRecords: 256})
	if err != nil {
		t.Fatal(err)
	}
	taps := map[string]pcap.Taps{"up": c.AddTaps("up"), "down": c.AddTaps("down")}
	for _, s := range seen {
		at := scenarioStart + int64(s.atMs*1e6)
		b := s.p.Build()
		if !c.Offer(taps[s.dir].In, at, b, nil) || !c.Offer(taps[s.dir].Out, at+1_000_000, b, nil) {
			t.Fatal("capture refused a record")
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRTT(t *testing.T) {
	const ack = 0x10
	// Flow A: TCP with timestamps over IPv4, ECT(1): the L queue.
	up := func(seq uint32, payload int, tsval, tsecr uint32) pcaptest.Packet {
		return pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 6, SPort: 5000, DPort: 80, ECN: aqm.ECT1,
			Seq: seq, Ack: 1, Flags: ack, Payload: payload, TS: true, TSval: tsval, TSecr: tsecr}
	}
	down := func(ackNo, tsval, tsecr uint32) pcaptest.Packet {
		return pcaptest.Packet{Src: pcaptest.Srv4, Dst: pcaptest.Cli4, Proto: 6, SPort: 80, DPort: 5000, ECN: aqm.ECT1,
			Seq: 1, Ack: ackNo, Flags: ack, TS: true, TSval: tsval, TSecr: tsecr}
	}
	// Flow B: TCP without timestamps over IPv6, Not-ECT: the C queue.
	b := func(src bool, seq, ackNo uint32, payload int) pcaptest.Packet {
		p := pcaptest.Packet{Src: pcaptest.Cli6, Dst: pcaptest.Srv6, Proto: 6, SPort: 6000, DPort: 443, Seq: seq, Ack: ackNo, Flags: ack, Payload: payload}
		if !src {
			p.Src, p.Dst, p.SPort, p.DPort = p.Dst, p.Src, p.DPort, p.SPort
		}
		return p
	}
	path := filepath.Join(t.TempDir(), "hop.pcapng")
	writeRTTCapture(t, path, []rttSeen{
		{0, "up", up(1000, 100, 10, 1)},
		{1, "up", b(true, 1, 1, 200)},
		{11, "down", b(false, 1, 201, 0)},    // out at 12: B server half 11 ms
		{12, "down", b(false, 1, 201, 1000)}, // B server data, out at 13
		{15, "up", b(true, 201, 1001, 0)},    // B client half 2 ms
		{20, "down", down(1100, 500, 10)},    // out at 21: A server half 21 ms
		{25, "up", up(1100, 100, 15, 500)},   // A client half 4 ms
		{45, "down", down(1200, 501, 15)},    // out at 46: A server half 21 ms
		{49, "up", up(1200, 100, 20, 501)},   // A client half 3 ms
		{50, "down", down(1200, 502, 15)},    // a duplicate echo: nothing
	})
	res, err := Analyze([]Input{{Path: path}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.RTT == nil || len(res.RTT.Flows) != 2 {
		t.Fatalf("rtt %+v, want two flows", res.RTT)
	}
	// Hand-worked: a percentile is the middle of the bucket of the sample
	// of nearest rank, never above the largest sample (rtt.Hist: 64
	// buckets per power of two; a sample v in [2^e, 2^(e+1)) lies in
	// [k·2^(e-6), (k+1)·2^(e-6) − 1], k = v >> (e-6)). A's client half has
	// samples 4 and 3 ms: p50 is the smaller (rank 1 of 2), 3 ms: e = 21,
	// k = 91, [2 981 888, 3 014 655], middle 2 998 271 ns; p99 is 4 ms,
	// whose bucket's middle (4 014 079) lies above the maximum, 4 ms. The
	// server half's samples are both 21 ms (middle 21 102 591, above the
	// maximum). B's client half is one sample of 2 ms (middle 2 007 039,
	// above the maximum); its server half 11 ms: e = 23, k = 83,
	// [10 878 976, 11 010 047], middle 10 944 511. The sum adds the
	// halves' figures.
	want := map[string]RTTFlow{
		"tcp 10.0.0.1:5000 > 10.0.1.1:80": {Class: "L", Method: rtt.MethodTCPTimestamps, Status: rtt.StatusMeasured,
			Client: rtt.Figures{N: 2, P50Ms: 2.998271, P99Ms: 4, MaxMs: 4}, Server: rtt.Figures{N: 2, P50Ms: 21, P99Ms: 21, MaxMs: 21},
			Sum: rtt.Figures{N: 2, P50Ms: 23.998271, P99Ms: 25, MaxMs: 25}},
		"tcp [fd00::1]:6000 > [fd00:1::1]:443": {Class: "C", Method: rtt.MethodTCPSeq, Status: rtt.StatusMeasured,
			Client: rtt.Figures{N: 1, P50Ms: 2, P99Ms: 2, MaxMs: 2}, Server: rtt.Figures{N: 1, P50Ms: 10.944511, P99Ms: 10.944511, MaxMs: 11},
			Sum: rtt.Figures{N: 1, P50Ms: 12.944511, P99Ms: 12.944511, MaxMs: 13}},
	}
	for _, f := range res.RTT.Flows {
		w, ok := want[f.Flow]
		if !ok {
			t.Errorf("unexpected flow %q", f.Flow)
			continue
		}
		f.hists, w.Flow = [2]rtt.Hist{}, f.Flow
		if f != w {
			t.Errorf("flow %s:\n got %+v\nwant %+v", f.Flow, f, w)
		}
	}
	if st := res.RTT.Stats; st.Samples != 6 || st.Packets != 10 {
		t.Errorf("stats %+v: want 10 packets (up in and down out only), 6 samples", st)
	}

	var js bytes.Buffer
	if err := json.NewEncoder(&js).Encode(res); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"rtt":{"stats":{"packets":10`, `"method":"tcp-timestamps"`, `"status":"measured"`,
		`"client_half":{"n":2,"p50_ms":2.998271,"p99_ms":4,"max_ms":4}`, `"sum":{"n":1,"p50_ms":12.944511,"p99_ms":12.944511,"max_ms":13}`} {
		if !strings.Contains(js.String(), s) {
			t.Errorf("JSON lacks %s:\n%s", s, js.String())
		}
	}
	var tab bytes.Buffer
	if err := res.WriteTable(&tab); err != nil {
		t.Fatal(err)
	}
	wantRow := "tcp 10.0.0.1:5000 > 10.0.1.1:80 L tcp-timestamps 3.00/4.00 21.00/21.00 24.00/25.00 2/2 measured"
	found := false
	for line := range strings.Lines(tab.String()) {
		found = found || strings.Join(strings.Fields(line), " ") == wantRow
	}
	if !found {
		t.Errorf("table lacks the row %q:\n%s", wantRow, tab.String())
	}
	dir := filepath.Join(t.TempDir(), "plots")
	files, err := res.WritePlots(dir, nil, invoker.User{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(files, filepath.Join(dir, "rtt-ccdf.png")) {
		t.Errorf("no RTT CCDF among %v", files)
	}
}

// TestRTTCurve: the class curve adds the merged halves' quantiles at each
// share; a class timed on one half only draws that half.
func TestRTTCurve(t *testing.T) {
	var a, b RTTFlow
	for _, v := range []int64{1, 2, 3, 4} {
		a.hists[rtt.ClientHalf].Add(v * 1_000_000)
		b.hists[rtt.ServerHalf].Add(10 * v * 1_000_000)
	}
	d := rttCurve([]*RTTFlow{&a, &b})
	if d.N != 4 || d.X[len(d.X)-1] != 44 {
		t.Errorf("curve n %d, last %v ms; want 4 and 4 + 40", d.N, d.X[len(d.X)-1])
	}
	d = rttCurve([]*RTTFlow{&b})
	if d.N != 4 || d.X[len(d.X)-1] != 40 {
		t.Errorf("one half: n %d, last %v ms; want 4 and 40", d.N, d.X[len(d.X)-1])
	}
}
