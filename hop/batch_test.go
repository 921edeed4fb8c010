package hop

import (
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/tun"
)

// nullDevice hands out copies of one packet, burst at a time, and takes
// whatever is written without keeping it: a device that allocates nothing,
// so that what the owner allocates can be counted.
type nullDevice struct {
	pkt     []byte
	left    int // packets TryRead still hands out
	writes  int
	written int
}

func (d *nullDevice) Name() string { return "null" }
func (d *nullDevice) MTU() int     { return 1500 }
func (d *nullDevice) Close() error { return nil }
func (d *nullDevice) PollFd() int  { return -1 }

func (d *nullDevice) Read(bufs [][]byte, sizes []int) (int, error) { return d.TryRead(bufs, sizes) }

func (d *nullDevice) TryRead(bufs [][]byte, sizes []int) (int, error) {
	n := min(len(bufs), d.left)
	for i := range n {
		sizes[i] = copy(bufs[i], d.pkt)
	}
	d.left -= n
	return n, nil
}

func (d *nullDevice) Write(bufs [][]byte) (int, error) {
	d.writes++
	d.written += len(bufs)
	return len(bufs), nil
}

// coalescingDevice is a nullDevice that says it coalesces what it is
// written, as the offload backend does (tun.OffloadCounter).
type coalescingDevice struct{ *nullDevice }

func (coalescingDevice) OffloadStats() tun.OffloadStats { return tun.OffloadStats{} }

// The owner's data path, read batch to written batch, allocates nothing:
// not per packet, not per batch.
func TestOwnerBatchAllocatesNothing(t *testing.T) {
	in, out := &nullDevice{pkt: udp4(1500, aqm.ECT1, 1)}, &nullDevice{}
	h, err := New(testConfig(100_000_000_000, 0), in, out)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	o := h.dirs[Up]
	step := func() {
		in.left = 64
		if _, err := o.readBatch(); err != nil {
			t.Fatal(err)
		}
		// 64 packets take 7.7 µs at 100 Gbit/s: wait that out, so that each
		// step releases what it read and the queue stays empty.
		for t0 := time.Now(); time.Since(t0) < 20*time.Microsecond; {
		}
		o.release(clock())
	}
	step() // first use of every buffer
	if allocs := testing.AllocsPerRun(200, step); allocs != 0 {
		t.Errorf("%v allocations per batch of 64 packets, want 0", allocs)
	}
	if out.written < 64*200 || out.writes > out.written/32 {
		t.Errorf("%d packets written in %d writes: want every packet, in batches", out.written, out.writes)
	}
}

// On a fast link the owner writes what it released in batches even when
// it never sleeps (a busy owner passes every few µs): packets released
// within batchSleep of the first go out in one Write, held meanwhile,
// and a snapshot counts the held ones as pending (In = Out + Dropped +
// Pending). A lone packet is written as soon as it is released. Holding
// allocates nothing.
//
// The passes run at times taken from the link's own schedule (its next
// release, then steps of 2 µs), not from the wall clock: a descheduled
// test on a loaded machine would otherwise see a pass late enough to
// flush early, which is the right behaviour and not what is tested here.
func TestReleaseBatchesWritesOnAFastLink(t *testing.T) {
	in, out := &nullDevice{pkt: udp4(1500, aqm.ECT1, 1)}, &nullDevice{}
	h, err := New(testConfig(1_000_000_000, 0), in, coalescingDevice{out}) // 12 µs a packet
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	o := h.dirs[Up]
	// pass runs a release at a time ahead of the wall clock, then waits
	// for the clock to get there, so the next read (stamped with the
	// clock) comes after it, as it would live.
	pass := func(now int64) {
		o.release(now)
		for clock() < now {
		}
	}
	in.left = 1
	if _, err := o.readBatch(); err != nil {
		t.Fatal(err)
	}
	pass(o.link.NextRelease())
	if out.written != 1 || len(o.wbufs) != 0 {
		t.Fatalf("a lone packet: %d written, %d held after its release; want it written", out.written, len(o.wbufs))
	}
	// Six packets leave 12 µs apart, the last 60 µs after the first;
	// passes every 2 µs from the first release: one write, when the last
	// is released.
	var heldSeen bool
	burst := func() {
		in.left = 6
		if _, err := o.readBatch(); err != nil {
			t.Fatal(err)
		}
		w0, n0 := out.writes, out.written
		first := o.link.NextRelease()
		for now := first; out.written < n0+6 && now < first+batchSleep; now += 2_000 {
			pass(now)
			if len(o.wbufs) > 0 && !heldSeen {
				heldSeen = true
				o.publish(now, true)
				s := o.rep.snap.Load()
				if s.In != s.Out+s.Dropped()+uint64(s.Pending) {
					t.Errorf("while %d are held: In %d, Out %d, Dropped %d, Pending %d: want In = Out + Dropped + Pending", len(o.wbufs), s.In, s.Out, s.Dropped(), s.Pending)
				}
			}
		}
		if out.written != n0+6 || out.writes != w0+1 {
			t.Errorf("6 packets released over 60 µs: %d written in %d writes; want 6 in 1", out.written-n0, out.writes-w0)
		}
	}
	burst()
	if !heldSeen {
		t.Error("no packet was held between passes")
	}
	if allocs := testing.AllocsPerRun(20, burst); allocs != 0 {
		t.Errorf("%v allocations per burst held and written, want 0", allocs)
	}
}

// A device that does not coalesce (plain) gains nothing from a held
// write: every pass writes what it released.
func TestReleaseHoldsNothingForAPlainDevice(t *testing.T) {
	in, out := &nullDevice{pkt: udp4(1500, aqm.ECT1, 1)}, &nullDevice{}
	h, err := New(testConfig(1_000_000_000, 0), in, out)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	o := h.dirs[Up]
	// Passes every 2 µs from the first release, at times from the link's
	// schedule (see TestReleaseBatchesWritesOnAFastLink).
	in.left = 6
	if _, err := o.readBatch(); err != nil {
		t.Fatal(err)
	}
	first := o.link.NextRelease()
	for now := first; out.written < 6 && now < first+batchSleep; now += 2_000 {
		o.release(now)
		if len(o.wbufs) > 0 {
			t.Fatalf("%d packets held after a pass, want none", len(o.wbufs))
		}
	}
	if out.written != 6 || out.writes < 2 {
		t.Errorf("6 packets released over 60 µs: %d written in %d writes; want 6, written as released", out.written, out.writes)
	}
}
