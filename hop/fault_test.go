package hop

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/pi2hop/pi2hop/tun/tuntest"
)

// faultTap keeps the event of every packet written out or dropped.
type faultTap struct {
	mu  sync.Mutex
	out []shaper.Event
}

func (f *faultTap) Packet(d, p int, at int64, pkt []byte, ev *shaper.Event) {
	if TapPoint(p) == TapIn {
		return
	}
	f.mu.Lock()
	f.out = append(f.out, *ev)
	f.mu.Unlock()
}

// A hop with a fault writes the faulted codepoint into the packet bytes,
// with a valid IPv4 header checksum, tells the tap which fault acted and
// how, counts it by kind, and takes a new fault live.
func TestHopECNFault(t *testing.T) {
	cfg := testConfig(100_000_000, 0)
	cfg.Up.Link.Fault = shaper.Fault{Kind: shaper.FaultMangle, After: true}
	c, err := tuntest.NewChannelDevice("c", 1500, 64)
	if err != nil {
		t.Fatal(err)
	}
	s, err := tuntest.NewChannelDevice("s", 1500, 64)
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(cfg, c, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	tap := &faultTap{}
	h.SetTap(tap)
	go h.Run(context.Background())
	deadline := time.Now().Add(5 * time.Second)
	for !h.Stats().Running {
		if time.Now().After(deadline) {
			t.Fatal("the hop was not running within 5 s")
		}
		time.Sleep(time.Millisecond)
	}
	th := &testHop{Hop: h, client: c, server: s}

	send := func(ecn aqm.ECN, port uint16) []byte {
		t.Helper()
		th.client.Inject(udp4(200, ecn, port))
		return receive(t, th.server.Outbound, 1, 2*time.Second)[0]
	}
	for _, tt := range []struct {
		fault    string
		in, want aqm.ECN
		acted    bool
	}{
		{"mangle,after", aqm.ECT1, aqm.CE, true},
		{"mangle,after", aqm.NotECT, aqm.NotECT, false},
		{"ect1-to-ect0", aqm.ECT1, aqm.ECT0, true},
		{"ect1-to-ect0", aqm.ECT0, aqm.ECT0, false},
		{"bleach,dport=9", aqm.CE, aqm.NotECT, true},
		{"none", aqm.ECT1, aqm.ECT1, false},
	} {
		f, err := shaper.ParseFault(tt.fault)
		if err != nil {
			t.Fatal(err)
		}
		if f != h.Config().Up.Link.Fault {
			next := h.Config()
			next.Up.Link.Fault = f
			if err := h.Reconfigure(next); err != nil {
				t.Fatalf("reconfigure to %s: %v", tt.fault, err)
			}
		}
		tap.mu.Lock()
		tap.out = tap.out[:0]
		tap.mu.Unlock()
		before := h.Stats().Up.Link.Faults[f.Kind]
		pkt := send(tt.in, 7)
		if got := aqm.Header(pkt).ECN(); got != tt.want {
			t.Errorf("%s: %v left as %v, want %v", tt.fault, tt.in, got, tt.want)
		}
		if aqm.Checksum(pkt[:20]) != 0 {
			t.Errorf("%s: IPv4 header checksum does not verify", tt.fault)
		}
		tap.mu.Lock()
		ev := tap.out[0]
		tap.mu.Unlock()
		if acted := ev.Fault != shaper.FaultNone; acted != tt.acted || (acted && (ev.Fault != f.Kind || ev.FaultFrom != tt.in || ev.FaultTo != tt.want)) {
			t.Errorf("%s: tap saw fault %s %v->%v, want acted=%v", tt.fault, ev.Fault, ev.FaultFrom, ev.FaultTo, tt.acted)
		}
		want := before
		if tt.acted {
			want++
		}
		if got := h.Stats().Up.Link.Faults[f.Kind]; got != want {
			t.Errorf("%s: counted %d, want %d", tt.fault, got, want)
		}
	}
	if st := h.Stats().Up; st.Fault != "" {
		t.Errorf("stats name fault %q after none", st.Fault)
	}
}
