package hop

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/tun/tuntest"
)

// stallingDevice is a server-side device whose write of every 25th packet
// takes 3 ms, as a preempted owner thread or a slow TUN write would. It
// records when each packet (by source port) came out; the owner writes
// released packets in batches, so one Write may carry several.
type stallingDevice struct {
	*tuntest.ChannelDevice
	mu  sync.Mutex
	out map[uint16]time.Time
}

func (s *stallingDevice) Write(b [][]byte) (int, error) {
	for _, p := range b {
		port := binary.BigEndian.Uint16(p[20:])
		s.mu.Lock()
		s.out[port] = time.Now()
		s.mu.Unlock()
		if port%25 == 0 {
			time.Sleep(3 * time.Millisecond)
		}
	}
	return s.ChannelDevice.Write(b)
}

// TestNoPacketLeavesBeforeItsDelay: packets keep arriving while the owner
// is stuck in slow writes; none may come out sooner than the configured
// one-way delay after it was handed to the hop. Stamping arrivals with a
// clock read before the writes let packets out early by up to a stalled
// write; the race needs unlucky scheduling, so this guards the property
// rather than reproducing the race on every run.
func TestNoPacketLeavesBeforeItsDelay(t *testing.T) {
	const delay = 10 * time.Millisecond
	client, err := tuntest.NewChannelDevice("c", 1500, 4096)
	if err != nil {
		t.Fatal(err)
	}
	server, err := tuntest.NewChannelDevice("s", 1500, 4096)
	if err != nil {
		t.Fatal(err)
	}
	sd := &stallingDevice{ChannelDevice: server, out: map[uint16]time.Time{}}
	h, err := New(testConfig(10_000_000, delay), client, sd)
	if err != nil {
		t.Fatal(err)
	}
	go h.Run(context.Background())
	t.Cleanup(func() { h.Close() })
	go func() {
		for range server.Outbound {
		}
	}()
	for !h.Stats().Running {
		time.Sleep(time.Millisecond)
	}

	const n = 400
	in := make(map[uint16]time.Time, n)
	for i := uint16(1); i <= n; i++ {
		in[i] = time.Now()
		client.Inject(udp4(100, aqm.NotECT, i))
		time.Sleep(300 * time.Microsecond)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		sd.mu.Lock()
		got := len(sd.out)
		sd.mu.Unlock()
		if got == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d packets came out", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	sd.mu.Lock()
	defer sd.mu.Unlock()
	early := 0
	var worst time.Duration
	for port, t0 := range in {
		if d := sd.out[port].Sub(t0); d < delay {
			early++
			worst = max(worst, delay-d)
		}
	}
	if early > 0 {
		t.Errorf("%d of %d packets left before the %v delay, the worst %v early", early, n, delay, worst)
	}
}
