package hop

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/pi2hop/pi2hop/pcap/pcaptest"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/pi2hop/pi2hop/tun/tuntest"
)

// countingTap counts tapped packets per direction and point and checks
// what each point must carry.
type countingTap struct {
	t      *testing.T
	mu     sync.Mutex
	n      [2][3]int
	marked int
}

func (c *countingTap) Packet(d, p int, at int64, pkt []byte, ev *shaper.Event) {
	dir, point := Dir(d), TapPoint(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[dir][point]++
	switch {
	case point == TapIn && ev != nil:
		c.t.Errorf("TapIn with an event")
	case point != TapIn && ev == nil:
		c.t.Errorf("%s without an event", point)
	case point == TapDrop && ev.Verdict.Action != aqm.Drop:
		c.t.Errorf("TapDrop with verdict %v", ev.Verdict.Action)
	case point == TapOut && ev.Verdict.Action == aqm.Mark:
		if aqm.Header(pkt).ECN() != aqm.CE {
			c.t.Errorf("TapOut of a marked packet without CE in its bytes")
		}
		c.marked++
	}
}

func TestTapSeesEveryPacketOnce(t *testing.T) {
	cfg := testConfig(10_000_000, 0)
	q := aqm.Spec{Kind: aqm.KindFIFO, FIFO: aqm.FIFOConfig{Limit: 20}}
	cfg.Up.Queue = q // a short FIFO: a burst of 60 loses some at enqueue
	c, _ := tuntest.NewChannelDevice("c", 1500, 128)
	s, _ := tuntest.NewChannelDevice("s", 1500, 128)
	h, err := New(cfg, c, s)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	tap := &countingTap{t: t}
	h.SetTap(tap)
	go h.Run(context.Background())
	for i := 0; i < 60; i++ {
		c.Inject(udp4(1000, aqm.NotECT, uint16(i)))
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		st := h.Stats().Up
		if st.In == 60 && st.Pending == 0 {
			tap.mu.Lock()
			n := tap.n[Up]
			tap.mu.Unlock()
			if n[TapIn] != 60 || uint64(n[TapOut]) != st.Out || uint64(n[TapDrop]) != st.Dropped() || n[TapOut]+n[TapDrop] != 60 {
				t.Errorf("tap in %d out %d drop %d; stats out %d dropped %d", n[TapIn], n[TapOut], n[TapDrop], st.Out, st.Dropped())
			}
			if st.Dropped() == 0 {
				t.Errorf("no drops: the test proves nothing about TapDrop")
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats never settled: %+v", st.QueueDrops)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pcap.HopTap takes hop's directions and tap points as integers (pcap
// cannot import hop); this pins the contract: each (Dir, TapPoint) lands in
// the capture interface named prefix + Dir + "-" + TapPoint.
var _ Tap = (*pcap.HopTap)(nil)

func TestPcapHopTapNamesEveryPoint(t *testing.T) {
	path := t.TempDir() + "/tap.pcapng"
	c, err := pcap.NewCapture(path, pcap.Options{Snaplen: 64})
	if err != nil {
		t.Fatal(err)
	}
	var tap Tap = pcap.NewHopTap(c, "run.")
	pkt := pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 17}.Build()
	var want []string
	at := int64(1)
	for _, d := range []Dir{Up, Down} {
		for _, p := range []TapPoint{TapIn, TapOut, TapDrop} {
			var ev *shaper.Event
			if p != TapIn {
				ev = &shaper.Event{Verdict: aqm.Verdict{Action: aqm.Pass}}
				if p == TapDrop {
					ev.Verdict.Action = aqm.Drop
				}
			}
			tap.Packet(int(d), int(p), at, pkt, ev)
			want = append(want, "run."+d.String()+"-"+p.String())
			at++
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := pcap.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i, w := range want {
		p, err := r.Next()
		if err != nil {
			t.Fatalf("packet %d (%s): %v", i, w, err)
		}
		if p.Interface != w || p.Time != int64(i+1) {
			t.Errorf("packet %d: interface %q at %d, want %q at %d", i, p.Interface, p.Time, w, i+1)
		}
		if p.HasAnn != (i%3 != 0) {
			t.Errorf("packet %d (%s): annotation %v", i, w, p.HasAnn)
		}
	}
}
