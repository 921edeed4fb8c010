package hop

import (
	"sync"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
)

// A snapshot a reader asks for is handed over in the owner's own buffer:
// serving it allocates nothing on the owner's thread.
func TestRequestedSnapshotAllocatesNothing(t *testing.T) {
	in, out := &nullDevice{pkt: udp4(1500, aqm.ECT1, 1)}, &nullDevice{}
	h, err := New(testConfig(100_000_000, 10*time.Millisecond), in, out)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	o := h.dirs[Up]
	serve := func() {
		o.rep.statsReq.Store(true)
		o.publish(clock(), false)
		<-o.rep.published
	}
	serve()
	if allocs := testing.AllocsPerRun(100, serve); allocs != 0 {
		t.Errorf("%v allocations per requested snapshot, want 0", allocs)
	}
	if got := o.rep.reqSnap; got.Rate != "100mbit" || got.Bps != 100_000_000 || got.Delay != int64(10*time.Millisecond) || got.Seq != o.rep.seq {
		t.Errorf("served snapshot: rate %q (%d bit/s), delay %d, seq %d; want 100mbit, 10 ms, seq %d", got.Rate, got.Bps, got.Delay, got.Seq, o.rep.seq)
	}
}

// Readers polling a running hop while it forwards, as the lab's sampler
// does, get snapshots whose sequence numbers and counters never go back,
// and the counters add up; a stored (periodic) snapshot between them
// changes nothing of that. Run under the race detector, it checks that
// the owner never writes the buffer a reader copies.
func TestSnapshotsOfARunningHopOnlyGoForward(t *testing.T) {
	cfg := testConfig(100_000_000, 2*time.Millisecond)
	cfg.StatsInterval = time.Millisecond // periodic publishes between the requests
	h := startHop(t, cfg)
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() { // traffic: 8 packets a ms, about the link's rate
		defer close(stopped)
		p := udp4(1500, aqm.ECT1, 1)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for range 8 {
				h.client.Inject(p)
			}
			time.Sleep(time.Millisecond)
			for len(h.server.Outbound) > 0 {
				<-h.server.Outbound
			}
		}
	}()
	readers := make([][]DirStats, 2)
	var wg sync.WaitGroup
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				readers[r] = append(readers[r], h.Stats().Up)
				time.Sleep(100 * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-stopped
	for r, ss := range readers {
		for i := 1; i < len(ss); i++ {
			a, b := ss[i-1], ss[i]
			if b.Seq <= a.Seq || b.In < a.In || b.Out < a.Out {
				t.Fatalf("reader %d, snapshot %d: seq %d in %d out %d after seq %d in %d out %d: want each later than the one before", r, i, b.Seq, b.In, b.Out, a.Seq, a.In, a.Out)
			}
			checkBalance(t, b)
		}
		if last := ss[len(ss)-1]; last.In == 0 {
			t.Errorf("reader %d: no packet counted in %d snapshots", r, len(ss))
		}
	}
}

// An idle hop stores a snapshot every interval that nobody asks for: it
// writes it into one of its own buffers, allocating nothing on the
// owner's thread (garbage made there while idle only grows the heap).
func TestStoredSnapshotAllocatesNothing(t *testing.T) {
	in, out := &nullDevice{pkt: udp4(1500, aqm.ECT1, 1)}, &nullDevice{}
	h, err := New(testConfig(100_000_000, 10*time.Millisecond), in, out)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	o := h.dirs[Up]
	publish := func() { o.publish(clock(), false) }
	publish()
	if allocs := testing.AllocsPerRun(100, publish); allocs != 0 {
		t.Errorf("%v allocations per periodic publish, want 0", allocs)
	}
	if s := o.rep.snap.Load(); s.Seq != o.rep.seq || s.Rate != "100mbit" {
		t.Errorf("stored snapshot: seq %d rate %q, want seq %d, 100mbit", s.Seq, s.Rate, o.rep.seq)
	}
}

// The buffer a reader announced (held) is never written while held, and
// the owner keeps storing newer snapshots into the other two.
func TestStoredSnapshotLeavesTheHeldBufferAlone(t *testing.T) {
	in, out := &nullDevice{pkt: udp4(1500, aqm.ECT1, 1)}, &nullDevice{}
	h, err := New(testConfig(100_000_000, 10*time.Millisecond), in, out)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	o := h.dirs[Up]
	o.publish(clock(), false)
	held := o.rep.snap.Load()
	o.rep.held.Store(held)
	seq := held.Seq
	for i := range 10 {
		o.publish(clock(), false)
		s := o.rep.snap.Load()
		if s == held || held.Seq != seq {
			t.Fatalf("publish %d: held buffer in snap (%v) or rewritten (seq %d, was %d)", i, s == held, held.Seq, seq)
		}
		if s.Seq != o.rep.seq {
			t.Fatalf("publish %d: stored seq %d, want %d", i, s.Seq, o.rep.seq)
		}
	}
	o.rep.held.Store(nil)
	var got DirStats
	o.newerStored(&got)
	if got.Seq != o.rep.seq {
		t.Errorf("reader got seq %d, want the last stored %d", got.Seq, o.rep.seq)
	}
}
