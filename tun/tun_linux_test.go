package tun

import (
	"errors"
	"os"
	"testing"

	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/vishvananda/netlink"
)

// openIn opens device name with backend b inside namespace ns, recorded
// in j so that its Undo removes it if the test dies before Close.
func openIn(j *netsys.Journal, ns, name string, mtu int, b Backend) (Device, error) {
	var d Device
	err := j.AddLink(ns, name, func() (err error) { d, err = OpenBackend(name, mtu, b); return err })
	return d, err
}

// testNamespace makes a namespace for t, removed when t ends, and the
// journal that records it and what the test adds to it.
func testNamespace(t *testing.T) (*netsys.Journal, string) {
	t.Helper()
	ns := roottest.Name("p2t")
	j := netsys.NewJournal(nil)
	t.Cleanup(func() { j.Undo() })
	if err := j.NewNamespace(ns); err != nil {
		t.Fatal(err)
	}
	return j, ns
}

// The devices we open have the MTU asked for and DefaultTxQueueLen.
func TestOpenSetsMTUAndTxQueueLen(t *testing.T) {
	roottest.Need(t)
	for _, b := range []Backend{BackendOffload, BackendPlain} {
		j, ns := testNamespace(t)
		d, err := openIn(j, ns, ns+"t", 1400, b)
		if err != nil {
			t.Fatal(err)
		}
		err = netsys.Do(ns, func() error {
			l, err := netlink.LinkByName(d.Name())
			if err != nil {
				return err
			}
			if l.Attrs().MTU != 1400 || l.Attrs().TxQLen != DefaultTxQueueLen {
				t.Errorf("backend %v: mtu %d txqlen %d, want 1400 %d", b, l.Attrs().MTU, l.Attrs().TxQLen, DefaultTxQueueLen)
			}
			return nil
		})
		d.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestTUNReadWriteAndClose(t *testing.T) {
	roottest.Need(t)
	j, ns := testNamespace(t)
	d, err := openIn(j, ns, ns+"t", 1500, BackendOffload)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := d.(Pollable)
	if !ok {
		t.Fatalf("%T is not Pollable", d)
	}
	bufs := [][]byte{make([]byte, 2048)}
	sizes := make([]int, 1)
	// The kernel may have queued a router solicitation or MLD report as
	// the link came up; after those, an idle device reads nothing.
	for i := 0; ; i++ {
		n, err := p.TryRead(bufs, sizes)
		if err != nil || i > 10 {
			t.Fatalf("TryRead on an idle device: n=%d after %d reads, err %v", n, i, err)
		}
		if n == 0 {
			break
		}
	}
	if _, err := d.(DropCounter).RingDrops(); err != nil {
		t.Errorf("RingDrops: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := d.Read(bufs, sizes)
		done <- err
	}()
	d.Close()
	if err := <-done; !errors.Is(err, os.ErrClosed) {
		t.Errorf("Read after Close = %v, want os.ErrClosed", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := p.TryRead(bufs, sizes); err != os.ErrClosed {
		t.Errorf("TryRead after Close = %v, want os.ErrClosed", err)
	}
}
