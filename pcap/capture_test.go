package pcap

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/pi2hop/pi2hop/pcap/pcaptest"
)

// readAll returns copies of every packet in path and the file's capture
// statistics.
func readAll(t *testing.T, path string) ([]Packet, *Reader) {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []Packet
	for {
		p, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, r
		}
		if err != nil {
			t.Fatal(err)
		}
		c := *p
		c.Data = append([]byte(nil), p.Data...)
		out = append(out, c)
	}
}

func TestCaptureRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.pcapng")
	c, err := NewCapture(path, Options{Snaplen: 64, Comment: "test run"})
	if err != nil {
		t.Fatal(err)
	}
	taps := c.AddTaps("up")
	big := pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 6, SPort: 1, DPort: 2, ECN: aqm.ECT1, ID: 7, Payload: 1400}.Build()
	ann := &Annotation{Class: aqm.L4S, Sojourn: 1234567, Prob: 1 << 30, ECNIn: aqm.ECT1,
		Verdict: aqm.Verdict{Action: aqm.Mark, Reason: aqm.ReasonStep, Class: aqm.L4S}, HasDecision: true}
	t0 := int64(1_700_000_000_123_456_789)
	if !c.Offer(taps.In, t0, big, &Annotation{Class: aqm.L4S, ECNIn: aqm.ECT1}) {
		t.Fatal("Offer refused with an empty buffer")
	}
	if !c.Offer(taps.Out, t0+5, pcaptest.SetCE(big), ann) {
		t.Fatal("Offer refused with an empty buffer")
	}
	if !c.Offer(taps.Drop, t0+9, big[:30], nil) {
		t.Fatal("Offer refused with an empty buffer")
	}
	if c.Offer(99, t0, big, nil) {
		t.Error("Offer accepted an unknown interface")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if c.Offer(taps.In, t0, big, nil) {
		t.Error("Offer accepted after Close")
	}

	pkts, r := readAll(t, path)
	if len(pkts) != 3 {
		t.Fatalf("read %d packets, want 3", len(pkts))
	}
	want := []struct {
		iface  string
		at     int64
		capLen int
		length int
		hasAnn bool
	}{
		{"up-in", t0, 64, len(big), true},
		{"up-out", t0 + 5, 64, len(big), true},
		{"up-drop", t0 + 9, 30, 30, false},
	}
	for i, w := range want {
		p := pkts[i]
		if p.Interface != w.iface || p.Time != w.at || len(p.Data) != w.capLen || p.Length != w.length || p.HasAnn != w.hasAnn {
			t.Errorf("packet %d: got %s t=%d cap=%d len=%d ann=%v, want %+v", i, p.Interface, p.Time, len(p.Data), p.Length, p.HasAnn, w)
		}
	}
	if pkts[1].Ann != *ann {
		t.Errorf("annotation read back as %+v, want %+v", pkts[1].Ann, *ann)
	}
	if !bytes.Equal(pkts[1].Data, pcaptest.SetCE(big)[:64]) {
		t.Error("packet bytes differ from what was offered")
	}
	st := r.InterfaceStats()
	for _, name := range []string{"up-in", "up-out", "up-drop"} {
		s, ok := st[name]
		if !ok || s.PacketsReceived != 1 || s.PacketsDropped != 0 {
			t.Errorf("%s statistics: %+v (present %v), want 1 received, 0 dropped", name, s, ok)
		}
	}
}

func TestCaptureDropsWhenBehind(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.pcapng")
	c, err := NewCapture(path, Options{BufferRecords: 16})
	if err != nil {
		t.Fatal(err)
	}
	in := c.AddInterface("up-in")
	pkt := pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 17, SPort: 1, DPort: 2, Payload: 100}.Build()
	// Stall the writer by holding the interface lock it takes when it
	// meets a file with no headers yet; Offer must go on without it.
	c.ifMu.Lock()
	accepted := 0
	start := time.Now()
	const offers = 1000
	for i := range offers {
		if c.Offer(in, int64(i), pkt, nil) {
			accepted++
		}
	}
	elapsed := time.Since(start)
	c.ifMu.Unlock()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// The writer may take the first record out of the ring before it
	// blocks, so 16 or 17 fit.
	if accepted < 16 || accepted > 17 {
		t.Errorf("accepted %d offers with a stalled writer and 16 records, want 16 or 17", accepted)
	}
	if elapsed > time.Second {
		t.Errorf("%d offers took %v: Offer blocked", offers, elapsed)
	}
	s := c.Stats()[0]
	if s.Written != uint64(accepted) || s.Dropped != uint64(offers-accepted) {
		t.Errorf("stats %+v, want written %d dropped %d", s, accepted, offers-accepted)
	}
	pkts, r := readAll(t, path)
	if len(pkts) != accepted {
		t.Errorf("file holds %d packets, want %d", len(pkts), accepted)
	}
	is := r.InterfaceStats()["up-in"]
	if is.PacketsDropped != uint64(offers-accepted) || is.PacketsReceived != offers {
		t.Errorf("isb: received %d dropped %d, want %d and %d", is.PacketsReceived, is.PacketsDropped, offers, offers-accepted)
	}
}

// The writer is not running while Offer is measured: AllocsPerRun counts
// every allocation of the process, the writer goroutine's included, and
// the 1001 records fit the ring.
func TestOfferDoesNotAllocate(t *testing.T) {
	c, err := newCapture(filepath.Join(t.TempDir(), "a.pcapng"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		go c.run()
		c.Close()
	}()
	in := c.AddInterface("up-out")
	pkt := pcaptest.Packet{Src: pcaptest.Cli6, Dst: pcaptest.Srv6, Proto: 6, Payload: 1000}.Build()
	ann := &Annotation{HasDecision: true, Sojourn: 5}
	allocs := testing.AllocsPerRun(1000, func() {
		if !c.Offer(in, 1, pkt, ann) {
			t.Fatal("Offer refused with room in the ring")
		}
	})
	if allocs != 0 {
		t.Errorf("Offer allocates %v times per call", allocs)
	}
}

func TestCaptureConcurrentProducers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.pcapng")
	c, err := NewCapture(path, Options{BufferRecords: 64})
	if err != nil {
		t.Fatal(err)
	}
	up, down := c.AddTaps("up"), c.AddTaps("down")
	pkt := pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 17, Payload: 60}.Build()
	var wg sync.WaitGroup
	for _, tap := range []int{up.In, down.In} {
		wg.Go(func() {
			for i := range 20000 {
				c.Offer(tap, int64(i), pkt, nil)
			}
		})
	}
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	pkts, _ := readAll(t, path)
	var written, dropped uint64
	for _, s := range c.Stats() {
		written += s.Written
		dropped += s.Dropped
	}
	if written+dropped != 40000 || written != uint64(len(pkts)) {
		t.Errorf("written %d + dropped %d != 40000 offers, or file has %d packets", written, dropped, len(pkts))
	}
}

func TestCaptureRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.pcapng")
	const maxSize = 8192
	c, err := NewCapture(path, Options{MaxSize: maxSize, BufferRecords: 4096})
	if err != nil {
		t.Fatal(err)
	}
	taps := c.AddTaps("up")
	pkt := pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 6, Payload: 1000}.Build()
	ann := &Annotation{HasDecision: true, Sojourn: 1e6, Verdict: aqm.Verdict{Action: aqm.Pass}}
	const n = 300
	for i := range n {
		for !c.Offer(taps.Out, int64(i)*1000, pkt, ann) {
			time.Sleep(time.Millisecond) // this test wants every packet
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	files := c.Files()
	if len(files) < 3 {
		t.Fatalf("%d files after %d packets of ~200 bytes with max size %d", len(files), n, maxSize)
	}
	total := 0
	for i, f := range files {
		if want := rotatedName(path, i); f != want {
			t.Errorf("file %d named %s, want %s", i, f, want)
		}
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > maxSize {
			t.Errorf("%s is %d bytes, over the %d limit", f, fi.Size(), maxSize)
		}
		pkts, r := readAll(t, f)
		total += len(pkts)
		if s := r.InterfaceStats()["up-out"]; s.PacketsReceived == 0 {
			t.Errorf("%s has no interface statistics for up-out", f)
		}
		for _, p := range pkts {
			if !p.HasAnn {
				t.Fatalf("%s: packet without its annotation", f)
			}
		}
	}
	if total != n {
		t.Errorf("files hold %d packets in all, want %d", total, n)
	}
}

func TestNewCaptureRejectsBadOptions(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		opt  Options
		path string
		want string
	}{
		{"snaplen", Options{Snaplen: -1}, "a", "snaplen"},
		{"records", Options{BufferRecords: -5}, "a", "buffer"},
		{"maxsize", Options{MaxSize: 100}, "a", "max size"},
		{"bytes", Options{BufferBytes: -1}, "a", "buffer of -1 bytes"},
		{"bytes too large", Options{BufferBytes: 2 << 30}, "a", "buffer of"},
		{"not one record", Options{Snaplen: 4096, BufferBytes: 4096}, "a", "cannot hold one record"},
		{"dir", Options{}, "no/such/dir/x", "no such file"},
	} {
		_, err := NewCapture(filepath.Join(dir, tc.path), tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}

// TestCaptureBufferBoundedInBytes: the ring's records and slab fit in
// BufferBytes whatever the snaplen, halving the record count to fit, and
// hold as many records as were asked for when they fit.
func TestCaptureBufferBoundedInBytes(t *testing.T) {
	dir := t.TempDir()
	for i, tc := range []struct {
		opt       Options
		wantSlots int // 0: the largest power of two that fits
	}{
		{Options{}, 8192}, // 8192 × (128 + bookkeeping) is under 16 MiB
		{Options{BufferRecords: 100}, 128},
		{Options{Snaplen: 262144}, 0},
		{Options{Snaplen: 65535, BufferRecords: 1 << 20}, 0},
		{Options{Snaplen: 1500, BufferBytes: 1 << 20}, 0},
		{Options{Snaplen: 128, BufferBytes: recordBytes(128)}, 1},
	} {
		c, err := NewCapture(filepath.Join(dir, fmt.Sprintf("b%d.pcapng", i)), tc.opt)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		snap, budget := c.opt.Snaplen, c.opt.BufferBytes
		slots := len(c.ring.recs)
		var slab int64
		for i := range c.ring.recs {
			slab += int64(cap(c.ring.recs[i].data))
		}
		used := int64(slots)*int64(unsafe.Sizeof(record{})) + slab
		if used > budget || slab != int64(slots*snap) {
			t.Errorf("%+v: %d slots use %d bytes (slab %d), budget %d", tc.opt, slots, used, slab, budget)
		}
		want := tc.wantSlots
		if want == 0 {
			want = 1
			for 2*int64(want)*recordBytes(snap) <= budget {
				want *= 2
			}
		}
		if slots != want {
			t.Errorf("%+v: %d slots, want %d", tc.opt, slots, want)
		}
	}
}

// TestTsharkReadsAnnotations checks that Wireshark's reader accepts the
// file without complaint and shows each annotation as the packet comment.
func TestTsharkReadsAnnotations(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		if roottest.InCI() {
			t.Fatalf("tshark not installed (make test installs it as root): %v", err)
		}
		t.Skip("tshark not installed")
	}
	path := filepath.Join(t.TempDir(), "t.pcapng")
	c, err := NewCapture(path, Options{Comment: "tshark test"})
	if err != nil {
		t.Fatal(err)
	}
	taps := c.AddTaps("down")
	anns := []*Annotation{
		nil,
		{Class: aqm.Classic, Sojourn: 15_000_000, Prob: 220_000_000, ECNIn: aqm.ECT0, HasDecision: true,
			Verdict: aqm.Verdict{Action: aqm.Mark, Reason: aqm.ReasonClassic}},
		{Class: aqm.L4S, Sojourn: 2_500_001, ECNIn: aqm.ECT1, HasDecision: true,
			Verdict: aqm.Verdict{Action: aqm.Drop, Reason: aqm.ReasonOverload}},
	}
	v6 := pcaptest.Packet{Src: pcaptest.Srv6, Dst: pcaptest.Cli6, Proto: 17, SPort: 443, DPort: 5000, ECN: aqm.ECT0, Payload: 500}.Build()
	for i, a := range anns {
		tap := []int{taps.In, taps.Out, taps.Drop}[i]
		c.Offer(tap, time.Now().UnixNano(), v6, a)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// The packet comment field is frame.comment since Wireshark 3.6 and
	// pkt_comment before; tshark refuses a field it does not know.
	var stdout, stderr bytes.Buffer
	for _, field := range []string{"frame.comment", "pkt_comment"} {
		stdout.Reset()
		stderr.Reset()
		cmd := exec.Command(tshark, "-r", path, "-T", "fields", "-e", "frame.interface_name", "-e", field)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err = cmd.Run(); err == nil || !strings.Contains(stderr.String(), field) {
			break
		}
	}
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, stderr.String())
	}
	for line := range strings.Lines(stderr.String()) {
		// tshark always warns when run as root; that is about us, not the file.
		if strings.HasPrefix(line, "Running as user \"root\"") {
			continue
		}
		t.Errorf("tshark printed: %s", line)
	}
	want := "down-in\t\n" +
		"down-out\tpi2hop: queue=C ecn-in=ECT(0) sojourn=15.000000ms prob=0.051223 verdict=marked reason=classic\n" +
		"down-drop\tpi2hop: queue=L ecn-in=ECT(1) sojourn=2.500001ms prob=0.000000 verdict=dropped reason=overload\n"
	if got := stdout.String(); got != want {
		t.Errorf("tshark fields:\n%s\nwant:\n%s", got, want)
	}
}

// TestCloseWhileOffering is the signal path: Close from another goroutine
// while the data path keeps offering leaves a complete file holding
// exactly the packets counted as written.
func TestCloseWhileOffering(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.pcapng")
	c, err := NewCapture(path, Options{BufferRecords: 256})
	if err != nil {
		t.Fatal(err)
	}
	up, down := c.AddTaps("up"), c.AddTaps("down")
	pkt := pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 6, Payload: 1000}.Build()
	ann := &Annotation{HasDecision: true, Sojourn: 1}
	stop := make(chan struct{})
	var wg, offering sync.WaitGroup
	var refusedAfterClose [2]int
	for i, tap := range []int{up.Out, down.Out} {
		offering.Add(1)
		wg.Go(func() {
			c.Offer(tap, 1, pkt, ann)
			offering.Done()
			for {
				select {
				case <-stop:
					if c.Offer(tap, 1, pkt, ann) {
						refusedAfterClose[i] = -1
					}
					return
				default:
					c.Offer(tap, 1, pkt, ann)
				}
			}
		})
	}
	// Close while both offer: after each has offered at least once (on a
	// loaded machine with fewer cores than busy goroutines one may not
	// run for a fixed 20 ms), and a little later.
	offering.Wait()
	time.Sleep(20 * time.Millisecond)
	var closers sync.WaitGroup
	for range 2 { // a signal handler and a deferred Close, racing
		closers.Go(func() {
			if err := c.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	closers.Wait()
	close(stop)
	wg.Wait()
	if refusedAfterClose != [2]int{} {
		t.Error("Offer accepted a packet after Close returned")
	}
	pkts, r := readAll(t, path) // fails on a truncated file
	var written uint64
	for _, s := range c.Stats() {
		written += s.Written
	}
	if written == 0 || uint64(len(pkts)) != written {
		t.Errorf("file holds %d packets, stats say %d written", len(pkts), written)
	}
	if s := r.InterfaceStats(); s["up-out"].PacketsReceived == 0 || s["down-out"].PacketsReceived == 0 {
		t.Errorf("interface statistics missing: %+v", s)
	}
}
