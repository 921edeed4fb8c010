package instance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/pi2hop/pi2hop/pcap/pcaptest"
	"github.com/pi2hop/pi2hop/tun/tuntest"
)

// fakeTopology runs a hop between channel devices and records the order
// of the lifecycle's calls.
type fakeTopology struct {
	name   string
	mu     sync.Mutex
	events []string
	h      *hop.Hop
	capt   *pcap.Capture
}

func (f *fakeTopology) record(e string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, e)
}

func (f *fakeTopology) Kind() string { return "fake" }
func (f *fakeTopology) Attrs() []any { return []any{"where", "channels"} }

func (f *fakeTopology) Start(ctx context.Context, env *Env) (*hop.Hop, error) {
	f.record("start")
	c, _ := tuntest.NewChannelDevice("c", 1500, 16)
	s, _ := tuntest.NewChannelDevice("s", 1500, 16)
	h, err := hop.New(env.Config, c, s)
	if err != nil {
		return nil, err
	}
	if tap := env.Tap(""); tap != nil {
		f.record("tap")
		h.SetTap(tap)
	}
	f.capt = env.Capture()
	f.h = h
	go h.Run(ctx)
	return h, nil
}

func (f *fakeTopology) Wait(ctx context.Context) error {
	<-ctx.Done()
	f.record("wait done")
	return nil
}

func (f *fakeTopology) Close() error {
	if _, err := os.Stat(SocketPath(f.name)); err == nil {
		f.record("close with the control socket still up")
	}
	f.record("close")
	err := f.h.Close()
	// The capture must still take packets: it closes after the topology.
	if f.capt != nil && !captureOpen(f.capt) {
		f.record("capture closed before the topology")
	}
	return err
}

// captureOpen reports whether c still takes a packet: OfferWait refuses
// only after Close.
func captureOpen(c *pcap.Capture) bool {
	taps := c.AddTaps("probe")
	return c.OfferWait(taps.In, 0, pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 17}.Build(), 0, nil)
}

// TestRunLifecycle runs an instance end to end: the state file and the
// control socket while it runs, typed edits over the socket, and the
// teardown order (control, topology, capture, state file).
func TestRunLifecycle(t *testing.T) {
	roottest.Need(t)
	name := fmt.Sprintf("p2i%d", os.Getpid()%10000)
	t.Cleanup(func() { Cleanup(name, nil, &bytes.Buffer{}) })
	topo := &fakeTopology{name: name}
	base := Settings{Rate: ptr(uint64(50e6))}
	cfg, err := base.Resolve(name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Name: name, Command: "test", Settings: base, Config: cfg, Stderr: &stderr, Verbose: true,
			Capture: func() (*pcap.Capture, error) {
				return pcap.NewCapture(filepath.Join(t.TempDir(), "cap.pcapng"), pcap.Options{})
			}}, topo)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := Stats(name); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer on the control socket within 5 s; stderr:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st, err := ReadState(name); err != nil || st.PID != os.Getpid() || st.Command != "test" {
		t.Errorf("state file %+v, %v", st, err)
	}
	if _, err := Set(name, Settings{Coupling: ptr(uint8(0))}); err == nil {
		t.Error("coupling 0 accepted")
	} else if re := (*RemoteError)(nil); !errors.As(err, &re) || re.Field != "coupling" {
		t.Errorf("set coupling 0: %v, want a RemoteError about coupling", err)
	}
	w, err := Set(name, Settings{DownRate: ptr(uint64(5e6)), MaxRTT: ptr(200 * time.Millisecond), Target: ptr(time.Millisecond)})
	if err != nil || len(w) != 1 {
		t.Errorf("set: %v, warnings %q", err, w)
	}
	snap, err := Stats(name)
	if err != nil || snap.Down.Bps != 5e6 || snap.Up.Bps != 50e6 {
		t.Errorf("stats after set: %v, up %d down %d bit/s; want 50e6, 5e6", err, snap.Up.Bps, snap.Down.Bps)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5 s of its cancellation")
	}
	want := "start tap wait done close"
	if got := strings.Join(topo.events, " "); got != want {
		t.Errorf("lifecycle order %q, want %q", got, want)
	}
	if topo.capt == nil || captureOpen(topo.capt) {
		t.Errorf("the capture is still open after Run returned")
	}
	for _, f := range []string{StatePath(name), SocketPath(name)} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s left behind", f)
		}
	}
	// The record with every field at debug level (-v), the lines a
	// person reads at any level.
	if !strings.Contains(stderr.String(), `msg="pi2hop running: fake" instance=`+name+" where=channels") {
		t.Errorf("start-up record missing in:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "pi2hop test \""+name+"\": ") || !strings.Contains(stderr.String(), "\nstats: pi2hop stats --name "+name+"   stop: Ctrl-C\n") {
		t.Errorf("start-up message missing in:\n%s", stderr.String())
	}
}
