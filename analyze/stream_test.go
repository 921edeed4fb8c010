package analyze

import (
	"bytes"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/pi2hop/pi2hop/pcap/pcaptest"
)

// TestSketchPercentilesMillion: analyze's sojourn and transit
// percentiles over a capture of one million records (500 000 packets at
// the in and the out tap) are within SketchAccuracy of the exact
// nearest-rank values (figure.Quantile) of the same samples, for the whole
// capture and per time bin.
func TestSketchPercentilesMillion(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads a million records")
	}
	const n = 500_000
	path := filepath.Join(t.TempDir(), "1m.pcapng")
	c, err := pcap.NewCapture(path, pcap.Options{BufferRecords: 1 << 14})
	if err != nil {
		t.Fatal(err)
	}
	up := c.AddTaps("up")
	offer := func(iface int, at int64, pkt []byte, ann *pcap.Annotation) {
		for !c.Offer(iface, at, pkt, ann) {
			time.Sleep(100 * time.Microsecond) // the test wants every record
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var sojourn, transit []int64
	binOf := map[int64][]int64{} // sojourn samples by absolute 1 s bin
	pkt := pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 17, SPort: 1, DPort: 2, ECN: aqm.ECT1}
	for i := range n {
		pkt.ID, pkt.Seq = uint32(i), uint32(i)
		b := pkt.Build()
		at := scenarioStart + int64(i)*20_000 // 50 kpkt/s: 10 s
		// Sojourns over five decades, 1µs to 100ms, log-uniform: every
		// bucket range of the sketch is used.
		soj := int64(math.Pow(10, 3+5*rng.Float64()))
		out := at + soj + 250_000
		offer(up.In, at, b, &pcap.Annotation{Class: aqm.L4S, ECNIn: aqm.ECT1})
		offer(up.Out, out, b, &pcap.Annotation{HasDecision: true, Class: aqm.L4S, ECNIn: aqm.ECT1, Sojourn: soj})
		sojourn = append(sojourn, soj)
		transit = append(transit, out-at)
		bin := out / 1e9 // the sojourn is counted when the packet leaves
		binOf[bin] = append(binOf[bin], soj)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := Analyze([]Input{{Path: path}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Files[0].Packets != 2*n {
		t.Fatalf("read %d records, want %d", res.Files[0].Packets, 2*n)
	}
	d := res.Directions[0]
	l := d.Classes[1]
	slices.Sort(sojourn)
	slices.Sort(transit)
	check := func(what string, got float64, sorted []int64, p float64) {
		t.Helper()
		exact := ms(figure.Quantile(sorted, p))
		if !nearSketch(got, exact) {
			t.Errorf("%s p%g: %.6f ms, exact %.6f ms: off by %.3g, more than %g", what, 100*p, got, exact, math.Abs(got-exact)/exact, SketchAccuracy)
		}
	}
	if l.Sojourn.Count != n || l.Transit.Count != n || d.Matched != n {
		t.Fatalf("%d sojourn samples, %d transit, %d matched; want %d each", l.Sojourn.Count, l.Transit.Count, d.Matched, n)
	}
	check("sojourn", l.Sojourn.P50, sojourn, 0.50)
	check("sojourn", l.Sojourn.P99, sojourn, 0.99)
	check("transit", l.Transit.P50, transit, 0.50)
	check("transit", l.Transit.P99, transit, 0.99)
	if l.Sojourn.Max != ms(sojourn[n-1]) || l.Sojourn.RelativeError != SketchAccuracy {
		t.Errorf("sojourn max %v (want exact %v), relative error %v", l.Sojourn.Max, ms(sojourn[n-1]), l.Sojourn.RelativeError)
	}
	for i, b := range d.Bins {
		vals := binOf[scenarioStart/1e9+int64(i)]
		slices.Sort(vals)
		if len(vals) == 0 {
			continue
		}
		check("bin sojourn", b.Classes[1].SojournP50, vals, 0.50)
		check("bin sojourn", b.Classes[1].SojournP99, vals, 0.99)
	}
}

// TestSketchNearestRank: on small sample sets the sketch picks the same
// sample figure.Quantile picks (to within the bucket), including the
// ranks where p·(n−1), DDSketch's own rank, would pick another one.
func TestSketchNearestRank(t *testing.T) {
	for _, tc := range []struct {
		vals []int64
		p    float64
	}{
		{[]int64{1e6, 2e6, 3e6}, 0.5},                // 2nd of 3
		{[]int64{1e6, 2e6, 3e6, 4e6}, 0.5},           // 2nd of 4 (p·(n−1) = 1.5)
		{[]int64{1e6, 2e6, 3e6, 4e6, 5e6}, 0.99},     // 5th
		{[]int64{-5e6, -1e6, 0, 1e6, 7e6}, 0.2},      // 1st: negative transit (clock skew)
		{[]int64{-5e6, -1e6, 0, 1e6, 7e6}, 0.5},      // 3rd: zero
		{[]int64{0, 0, 0, 10e6}, 0.99},               // 4th
		{[]int64{3, 3, 3, 3}, 0.5},                   // all equal: the max clamps
		{[]int64{1e9, 2e9, 4e9, 8e9, 16e9}, 0.3},     // 2nd
		{[]int64{1, 1e3, 1e6, 1e9, 1e12, 1e15}, 0.5}, // 3rd
	} {
		s := newSketch()
		for _, v := range tc.vals {
			s.add(v)
		}
		sorted := slices.Sorted(slices.Values(tc.vals))
		exact, got := figure.Quantile(sorted, tc.p), s.quantile(tc.p)
		if math.Abs(float64(got-exact)) > SketchAccuracy*math.Abs(float64(exact))+0.5 {
			t.Errorf("%v p%g: sketch %d, exact %d", tc.vals, tc.p, got, exact)
		}
	}
	if got := newSketch().percentiles(); got != (Percentiles{}) {
		t.Errorf("empty sketch: %+v", got)
	}
}

// TestPendingEvicted: ingress packets never seen at egress are given up
// once the newest ingress packet is a horizon (the longest transit seen,
// plus pendSlack) younger, so a one-point capture keeps one horizon of
// packets, not all of them; those given up are counted as unseen drops
// when there is an out tap and no drop tap, as the ones left at the end.
func TestPendingEvicted(t *testing.T) {
	d := newDirAcc("up")
	f := d.flow(FlowKey{Proto: 17})
	const gap = int64(time.Millisecond)
	const n = 100_000 // 100 s of packets
	for i := range int64(n) {
		at := i * gap
		bin, err := d.binFor(at / 1e9)
		if err != nil {
			t.Fatal(err)
		}
		d.pend.push(uint64(i), pending{at: at, flow: f, bin: bin, class: 1})
	}
	// With no transit seen, the horizon is pendSlack: 3000 packets.
	window := int(pendSlack/gap) + 1
	if d.pend.n != window || d.pend.unseen != uint64(n-window) {
		t.Errorf("%d pending, %d given up; want %d and %d", d.pend.n, d.pend.unseen, window, n-window)
	}
	if len(d.pend.ring) > 2*window {
		t.Errorf("ring of %d entries for %d pending", len(d.pend.ring), d.pend.n)
	}
	// A matched packet with a 2 s transit widens the horizon to 5 s.
	d.addTransit(d.classes[1], 2e9)
	if d.pend.longest != 2e9 {
		t.Errorf("longest transit %d", d.pend.longest)
	}
	d.addTransit(d.classes[1], 3600e9) // a wild timestamp is capped
	if d.pend.longest != maxTransit {
		t.Errorf("longest transit %d after a 1 h one, want the cap %d", d.pend.longest, maxTransit)
	}
	d.sawIn, d.sawOut = true, true
	r := d.result(&Analyzer{bin: 1e9, opt: Options{CouplingK: 2}}, 0)
	l := r.Classes[1]
	if r.UnmatchedIn != n || l.Dropped != n || l.DropsBy["unseen"] != n || r.Flows[0].Dropped != n {
		t.Errorf("unmatched in %d, L dropped %d (unseen %d), flow dropped %d; want %d each", r.UnmatchedIn, l.Dropped, l.DropsBy["unseen"], r.Flows[0].Dropped, n)
	}
	var binDrops uint64
	for _, b := range r.Bins {
		binDrops += b.Classes[1].Dropped
	}
	if binDrops != n {
		t.Errorf("%d drops in the bins, want %d", binDrops, n)
	}
}

// TestPendingMatchAfterEviction: entries that were matched leave the
// ring as the oldest live one moves on, and a key repeated (a
// retransmission) still matches oldest first.
func TestPendingMatchAfterEviction(t *testing.T) {
	d := newDirAcc("up")
	f := d.flow(FlowKey{Proto: 6})
	if _, err := d.binFor(0); err != nil {
		t.Fatal(err)
	}
	for i := range int64(10) {
		d.pend.push(7, pending{at: i, flow: f})
	}
	for i := range int64(10) {
		p, ok := d.pend.pop(7)
		if !ok || p.at != i {
			t.Fatalf("pop %d: %+v %v, want at %d", i, p, ok, i)
		}
	}
	if _, ok := d.pend.pop(7); ok || d.pend.n != 0 || d.pend.lo != d.pend.hi {
		t.Errorf("after popping all: n %d, ring [%d, %d)", d.pend.n, d.pend.lo, d.pend.hi)
	}
	// Interleaved keys, the oldest given up in arrival order.
	for i := range int64(4) {
		d.pend.push(uint64(i%2), pending{at: i, flow: f})
	}
	d.pend.evict(2) // gives up at 0 (key 0) and at 1 (key 1)
	if p, ok := d.pend.pop(0); !ok || p.at != 2 {
		t.Errorf("key 0 after eviction: %+v %v, want at 2", p, ok)
	}
	if p, ok := d.pend.pop(1); !ok || p.at != 3 {
		t.Errorf("key 1 after eviction: %+v %v, want at 3", p, ok)
	}
	if d.pend.unseen != 2 {
		t.Errorf("%d given up, want 2", d.pend.unseen)
	}
}

// TestFlowCap: flows after the first maxFlows are summed in one row.
func TestFlowCap(t *testing.T) {
	d := newDirAcc("up")
	for i := range maxFlows + 5 {
		f := d.flow(FlowKey{Proto: 17, SrcPort: uint16(i), DstPort: uint16(i >> 16)})
		f.res.In.Add(aqm.ECT1, 100)
	}
	if len(d.flows) != maxFlows {
		t.Fatalf("%d flows tracked, want %d", len(d.flows), maxFlows)
	}
	r := d.result(&Analyzer{bin: 1e9, opt: Options{CouplingK: 2}}, 0)
	var other *FlowResult
	for _, f := range r.Flows {
		if f.Flow == otherFlows {
			other = f
		}
	}
	if len(r.Flows) != maxFlows+1 || other == nil || other.In.Total().Packets != 5 {
		t.Errorf("%d rows, other %+v; want %d rows and 5 packets in %q", len(r.Flows), other, maxFlows+1, otherFlows)
	}
}

// TestAnalyzeCutCapture: a pi2hop capture cut at any point (a SIGKILL
// mid-write, a full disk) is analysed up to its last complete record:
// the packets read are the first ones of the whole file, with no error,
// and the file's result says it was truncated.
func TestAnalyzeCutCapture(t *testing.T) {
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.pcapng")
	scenario{n: 300}.write(t, whole)
	data, err := os.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	all := readPackets(t, data)
	for _, cut := range []int{len(data) - 1, len(data) - 37, len(data) * 2 / 3, len(data) / 2, 400} {
		part := filepath.Join(dir, "cut.pcapng")
		if err := os.WriteFile(part, data[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		got := readPackets(t, data[:cut])
		// (The file ends with statistics blocks, and starts with section
		// and interface blocks: a cut there loses no packet or has none.)
		if len(got) > len(all) || !slices.Equal(got, all[:len(got)]) ||
			cut == len(data)/2 && (len(got) == 0 || len(got) == len(all)) {
			t.Errorf("cut at %d of %d: %d packets, not a prefix of the %d", cut, len(data), len(got), len(all))
		}
		res, err := Analyze([]Input{{Path: part}}, Options{})
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		f := res.Files[0]
		if f.Truncated == nil || f.Packets != len(got) || len(f.Warnings()) != 1 {
			t.Errorf("cut at %d: %d packets (want %d), truncated %+v, warnings %q", cut, f.Packets, len(got), f.Truncated, f.Warnings())
		}
	}
}

// readPackets returns each packet's time and wire length, to compare.
func readPackets(t *testing.T, data []byte) [][2]int64 {
	t.Helper()
	r, err := pcap.NewReader(bytes.NewReader(data), "x")
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]int64
	for {
		p, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, [2]int64{p.Time, int64(p.Length)})
	}
}
