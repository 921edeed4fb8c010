package instance

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/pi2hop/pi2hop/tun/tuntest"
)

// runningHop starts a hop between two channel devices and waits until it
// takes edits.
func runningHop(t *testing.T, cfg hop.Config) *hop.Hop {
	t.Helper()
	c, err := tuntest.NewChannelDevice("c", 1500, 16)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := tuntest.NewChannelDevice("s", 1500, 16)
	h, err := hop.New(cfg, c, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	go h.Run(context.Background())
	deadline := time.Now().Add(5 * time.Second)
	for !h.Stats().Running {
		if time.Now().After(deadline) {
			t.Fatal("the hop did not start running within 5 s")
		}
		time.Sleep(time.Millisecond)
	}
	return h
}

// Concurrent set requests (the control server runs each on its own
// goroutine) apply one at a time: the settings the instance keeps and the
// hop's configuration end up from the same request.
func TestConcurrentSets(t *testing.T) {
	// The downlink's buffers carry the 16 rates asked, up to 16 Mbit/s.
	base := Settings{UpRate: ptr(uint64(50e6)), Rate: ptr(uint64(16e6))}
	cfg, err := base.Resolve("c")
	if err != nil {
		t.Fatal(err)
	}
	in := &instance{log: slog.New(slog.NewTextHandler(io.Discard, nil)), settings: base}
	in.hop = runningHop(t, cfg)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rate := uint64(1e6 * (i + 1))
			if _, err := in.set(Settings{Rate: &rate, Delay: ptr(time.Duration(i) * time.Millisecond)}); err != nil {
				t.Errorf("set %d: %v", i, err)
			}
			in.stats()
		}()
	}
	wg.Wait()
	c := in.hop.Config()
	down, ok := c.Down.Link.Rate.(shaper.Const)
	if !ok || down.BitsPerSecond != *in.settings.Rate {
		t.Errorf("hop's downlink %v, kept settings' rate %d: from different requests", c.Down.Link.Rate, *in.settings.Rate)
	}
	if time.Duration(c.Down.Link.Delay) != *in.settings.Delay || time.Duration(down.BitsPerSecond/1e6-1)*time.Millisecond != *in.settings.Delay {
		t.Errorf("rate %v and delay %v of the hop are not from one request", down, time.Duration(c.Down.Link.Delay))
	}
	if up := c.Up.Link.Rate.(shaper.Const); up.BitsPerSecond != 50e6 {
		t.Errorf("uplink %v, want its own 50mbit kept", up)
	}
}

// The control server answers a bad edit with the field it is about, and
// changes nothing.
func TestControlServeSet(t *testing.T) {
	cfg, _ := Settings{}.Resolve("c")
	in := &instance{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	in.hop = runningHop(t, cfg)
	s := &controlServer{h: in}
	resp := s.serve(Request{Op: OpSet, Set: &Settings{Rate: ptr(uint64(5e6)), Coupling: ptr(uint8(0))}})
	if resp.Error == "" || resp.Field != "coupling" {
		t.Errorf("response %+v, want an error about coupling", resp)
	}
	if r := in.hop.Config().Up.Link.Rate; r != (shaper.Const{BitsPerSecond: DefaultRate}) {
		t.Errorf("rate %v after a refused edit: all or nothing", r)
	}
	resp = s.serve(Request{Op: OpSet, Set: &Settings{MaxRTT: ptr(200 * time.Millisecond), Target: ptr(time.Millisecond)}})
	if resp.Error != "" || len(resp.Warnings) != 1 || in.hop.Config().Up.Queue.DualPI2.Target != 33333000 {
		t.Errorf("response %+v, target %d: want the tuned target (typical = max/6, 33.333 ms) and a warning", resp, in.hop.Config().Up.Queue.DualPI2.Target)
	}
	if resp := s.serve(Request{Op: "reboot"}); resp.Error == "" {
		t.Error("unknown op accepted")
	}
	if resp := s.serve(Request{Op: OpStats}); resp.Stats == nil || resp.Stats.Name != "c" {
		t.Errorf("stats response %+v", resp)
	}
}

// A set beyond the buffers the hop was built with is refused with the
// range they carry, and neither the hop nor the kept settings change.
func TestControlSetBeyondBuffers(t *testing.T) {
	base := Settings{Rate: ptr(uint64(100e6))}
	cfg, _ := base.Resolve("c")
	in := &instance{log: slog.New(slog.NewTextHandler(io.Discard, nil)), settings: base}
	in.hop = runningHop(t, cfg)
	s := &controlServer{h: in}
	resp := s.serve(Request{Op: OpSet, Set: &Settings{Delay: ptr(2 * time.Second)}})
	if !strings.Contains(resp.Error, "delay 2s is beyond what this hop's buffers carry live: rates up to 100mbit, delays up to 30.72ms") ||
		!strings.Contains(resp.Error, "restart the hop") || resp.Field != "delay" {
		t.Errorf("set delay 2s at 100mbit: %+v, want a refusal that names the buffers' limit", resp)
	}
	if d := in.hop.Config().Up.Link.Delay; d != 0 || in.settings.Delay != nil {
		t.Errorf("a refused set changed the delay to %v (kept settings %v)", time.Duration(d), in.settings.Delay)
	}
	if resp := s.serve(Request{Op: OpSet, Set: &Settings{Delay: ptr(20 * time.Millisecond)}}); resp.Error != "" {
		t.Errorf("set delay 20ms at 100mbit (167 packets, within the 256 the delay line holds): %s", resp.Error)
	}
}
