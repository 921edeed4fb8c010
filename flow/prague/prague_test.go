package prague

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
)

// The scalable law under random marking p, as udp_prague's ACK rule makes
// it: a CE cut (rate·alpha/2, alpha ≈ p) holds for one vRTT, and then the
// next ACK that brings a new mark cuts again; at rate/size ACKs per second
// that takes size/(p·rate) more, so a cycle lasts T = vRTT + size/(p·rate).
// Meanwhile the (1−p) unmarked ACKs grow the rate by (1−p)·MTU/vRTT² per
// second. Balance, with size = MTU, L = 2·MTU/(p·vRTT) and a = 1−p:
//
//	rate·p/2 = a·MTU·T/vRTT²  =>  rate² − a·L·rate − a·L²/2 = 0
//	                          =>  rate = L·(a + √(a² + 2a))/2
//
// i.e. 1.344·L at 2 % (60.2 Mbit/s at vRTT 25 ms) and 1.258·L at 10 %: still
// rate ∝ 1/p, a constant above the one-cut-per-vRTT 2·MTU/(p·vRTT).
func TestRandomMarkingScalableRate(t *testing.T) {
	tests := []struct {
		name string
		rtt  int64 // µs
		p    float64
	}{
		{"2% at 5ms (window mode, vRTT 25ms)", 5000, 0.02},
		{"10% at 5ms", 5000, 0.10},
		{"2% at 40ms (vRTT = RTT)", 40000, 0.02},
		{"2% at 1ms (rate mode)", 1000, 0.02},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cc, err := New(Config{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			path := &randomMarking{rtt: tc.rtt, p: tc.p, rng: rand.New(rand.NewPCG(1, 0x5eed)), from: 30e6}
			simulate(cc, path, 60e6)
			got := path.bytes / 30 // bytes/s over the second half
			vrtt := math.Max(float64(tc.rtt), RefRTT) / 1e6
			l, a := 2*DefaultMTU/(tc.p*vrtt), 1-tc.p
			want := l * (a + math.Sqrt(a*a+2*a)) / 2
			r := got / want
			t.Logf("rate %.2f Mbit/s, law %.2f Mbit/s (ratio %.3f)", got*8/1e6, want*8/1e6, r)
			if r < 0.92 || r > 1.08 {
				t.Errorf("rate %.2f Mbit/s, want %.2f Mbit/s ±8%%", got*8/1e6, want*8/1e6)
			}
			if a := cc.Info(0).Alpha; math.Abs(a-tc.p) > tc.p/2 {
				t.Errorf("alpha %.3f, want about p = %.3f", a, tc.p)
			}
		})
	}
}

// exchange has cc send sent packets, then take a 20 ms RTT sample and an
// ACK at now whose feedback fb has counted got's packets besides.
func exchange(cc *CC, fb *Feedback, now int64, sent int, got Feedback) {
	cc.Sent(sent)
	fb.Received += got.Received
	fb.CE += got.CE
	fb.Lost += got.Lost
	cc.RTT(20000)
	cc.ACK(now, *fb)
}

// steady returns a controller in congestion avoidance after some unmarked
// ACKs at a 20 ms RTT, and the feedback so far.
func steady(t *testing.T, cfg Config) (*CC, Feedback, int64) {
	t.Helper()
	cc, err := New(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	var fb Feedback
	now := int64(0)
	for i := 0; i < 2000; i++ {
		now += 1000
		exchange(cc, &fb, now, 1, Feedback{Received: 1})
	}
	if s := cc.Info(now).State; s != StateCA {
		t.Fatalf("state %v after unmarked ACKs, want ca", s)
	}
	return cc, fb, now
}

func TestLossHalvesOncePerVRTTAndUndo(t *testing.T) {
	cc, fb, now := steady(t, Config{})
	before := cc.Info(now).Rate

	now += 1000
	exchange(cc, &fb, now, 2, Feedback{Received: 1, Lost: 1})
	after := cc.Info(now)
	if r := after.Rate / before; math.Abs(r-0.5) > 0.01 {
		t.Fatalf("rate after loss = %.3f of before, want 0.5", r)
	}
	if after.State != StateLoss {
		t.Fatalf("state %v after loss, want loss", after.State)
	}
	// A second loss in the same vRTT does not halve again, and nothing grows.
	now += 1000
	cc.Sent(2)
	fb.Received++
	fb.Lost++
	cc.ACK(now, fb)
	if r := cc.Info(now).Rate / after.Rate; r != 1 {
		t.Errorf("second loss within a vRTT changed the rate by %.3f", r)
	}
	// Both "lost" packets arrive late: the receiver's lost counter goes
	// back to its value before the cut, and the cut is undone.
	now += 1000
	fb.Received += 2
	fb.Lost -= 2
	cc.ACK(now, fb)
	if got := cc.Info(now); math.Abs(got.Rate/before-1) > 0.01 || got.State != StateCA {
		t.Errorf("after reordering: rate %.3f of before, state %v; want 1.0, ca", got.Rate/before, got.State)
	}
}

// udp_prague keeps what a loss cut took until the next loss, so a packet
// that turns up after the loss state ended (a vRTT and a window later)
// still undoes the cut: the window gets back the half it lost.
func TestLossUndoAfterLossState(t *testing.T) {
	cc, fb, now := steady(t, Config{})
	before := cc.Info(now).Window
	now += 1000
	exchange(cc, &fb, now, 2, Feedback{Received: 1, Lost: 1})
	cut := cc.Info(now).Window
	if r := cut / before; math.Abs(r-0.5) > 0.01 {
		t.Fatalf("window after loss %.3f of before, want 0.5", r)
	}
	// 30 ms of clean ACKs: more than a vRTT (25 ms) and the window sent
	// before the cut; the loss state ends and the window grows again.
	for i := 0; i < 30; i++ {
		now += 1000
		exchange(cc, &fb, now, 1, Feedback{Received: 1})
	}
	mid := cc.Info(now)
	if mid.State != StateCA {
		t.Fatalf("state %v 30 ms after the loss, want ca", mid.State)
	}
	// The "lost" packet arrives late: the receiver's lost count goes back.
	now += 1000
	fb.Received++
	fb.Lost--
	cc.ACK(now, fb)
	got := cc.Info(now).Window
	// Window mode: the rate follows W/srtt and W = rate·srtt again, so
	// the undo shows as the cut's half-window added back.
	if want := mid.Window + before/2; math.Abs(got/want-1) > 0.02 {
		t.Errorf("window after the late packet %.0f B, want %.0f (%.0f + the %.0f B the cut took)", got, want, mid.Window, before/2)
	}
}

func TestLossInRateMode(t *testing.T) {
	cc, err := New(Config{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var fb Feedback
	now := int64(0)
	for i := 0; i < 5000; i++ { // 100 µs RTT: rate mode
		now += 100
		cc.Sent(1)
		fb.Received++
		cc.RTT(100)
		cc.ACK(now, fb)
	}
	info := cc.Info(now)
	// Rate mode: the window is a safety cap of one vRTT of data, not the
	// two packets that rate·srtt would give at 100 µs.
	if want := int(info.Rate * RefRTT / 1e6 / float64(info.PacketSize)); info.PacketWindow < want {
		t.Errorf("rate-mode packet window %d, want at least %d (one vRTT at %.1f Mbit/s)", info.PacketWindow, want, info.Rate*8/1e6)
	}
	before := info.Rate
	cc.Sent(1)
	fb.Lost++
	cc.ACK(now+100, fb)
	if r := cc.Info(now).Rate / before; math.Abs(r-0.5) > 0.01 {
		t.Errorf("rate-mode loss: rate %.3f of before, want 0.5", r)
	}
}

func TestErrorL4SSwitchesToNotECT(t *testing.T) {
	cc, fb, now := steady(t, Config{})
	if e := cc.Info(now).ECN; e != aqm.ECT1 {
		t.Fatalf("ECN %v before error_L4S, want ECT(1)", e)
	}
	fb.Received++
	fb.ErrorL4S = true
	cc.Sent(1)
	cc.ACK(now+1000, fb)
	if e := cc.Info(now).ECN; e != aqm.NotECT {
		t.Fatalf("ECN %v after error_L4S, want Not-ECT", e)
	}
	// For good: later ACKs without the flag do not bring ECT(1) back.
	fb.Received++
	fb.ErrorL4S = false
	cc.Sent(1)
	cc.ACK(now+2000, fb)
	cc.Timeout(now + 3000)
	if e := cc.Info(now).ECN; e != aqm.NotECT {
		t.Errorf("ECN %v after a clean ACK and a timeout, want Not-ECT", e)
	}
}

func TestCEMarkedACKsGiveNoIncrease(t *testing.T) {
	cc, fb, now := steady(t, Config{})
	w := cc.Info(now).Window
	for i := 0; i < 500; i++ {
		now += 1000
		exchange(cc, &fb, now, 1, Feedback{Received: 1, CE: 1})
		if got := cc.Info(now).Window; got > w {
			t.Fatalf("ACK %d (CE-marked): window grew from %.0f to %.0f", i, w, got)
		}
		w = cc.Info(now).Window
	}
	if a := cc.Info(now).Alpha; a < 0.5 {
		t.Errorf("alpha %.2f after 500 marked ACKs, want > 0.5", a)
	}
}

func TestClassicIgnoresCE(t *testing.T) {
	cc, fb, now := steady(t, Config{Classic: true})
	if e := cc.Info(now).ECN; e != aqm.NotECT {
		t.Fatalf("classic ECN %v, want Not-ECT", e)
	}
	w := cc.Info(now).Window
	for i := 0; i < 100; i++ {
		now += 1000
		cc.Sent(1)
		fb.Received++
		fb.CE++
		cc.ACK(now, fb)
	}
	if got := cc.Info(now); got.Window <= w || got.Alpha != 0 {
		t.Errorf("classic with CE: window %.0f -> %.0f, alpha %.2f; want growth, alpha 0", w, got.Window, got.Alpha)
	}
}

func TestStaleACKIgnored(t *testing.T) {
	cc, fb, now := steady(t, Config{})
	before := cc.Info(now)
	old := fb
	old.Received -= 5
	old.Lost += 3 // would be a loss if it were believed
	cc.ACK(now+1000, old)
	if got := cc.Info(now); got != before {
		t.Errorf("stale ACK changed the state: %+v -> %+v", before, got)
	}
}

func TestTimeoutResets(t *testing.T) {
	cc, fb, now := steady(t, Config{})
	cc.Sent(30) // a whole window lost in an outage
	if cc.Inflight() != 30 {
		t.Fatalf("inflight %d, want 30", cc.Inflight())
	}
	cc.Timeout(now)
	if n := cc.Inflight(); n != 0 {
		t.Errorf("inflight %d after a timeout, want the lost window written off", n)
	}
	// New packets get through; the receiver reports the 30 as lost.
	exchange(cc, &fb, now+1, 2, Feedback{Received: 1, Lost: 30})
	if n := cc.Inflight(); n != 1 {
		t.Errorf("inflight %d after the loss report, want 1", n)
	}
	cc.Timeout(now)
	got := cc.Info(now)
	if got.Rate != MinRate || got.Window != DefaultMTU || got.State != StateInit || got.Alpha != 0 {
		t.Errorf("after timeout: %+v; want rate %v, window %v, init, alpha 0", got, MinRate, DefaultMTU)
	}
}

func TestPacingAlternatesAroundRate(t *testing.T) {
	cc, _, now := steady(t, Config{})
	info := cc.Info(now)
	// The last alpha update was at most a vRTT ago; probe both halves.
	first := cc.Info(cc.alphaAt)
	second := cc.Info(cc.alphaAt + info.VRTT/2)
	if r := first.PacingRate / first.Rate; math.Abs(r-1.03) > 1e-9 {
		t.Errorf("first half pacing %.4f of rate, want 1.03", r)
	}
	if r := second.PacingRate / second.Rate; math.Abs(r-1/1.03) > 1e-9 {
		t.Errorf("second half pacing %.4f of rate, want 1/1.03", r)
	}
}

func TestFrameModeVRTTFloor(t *testing.T) {
	cc, err := New(Config{FPS: 30}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cc.RTT(5000)
	if v := cc.Info(0).VRTT; v != 33333 {
		t.Errorf("frame mode vRTT %d µs at 5 ms RTT and 30 fps, want 33333", v)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{{MTU: 100}, {MTU: 70000}, {MinRate: 2e6, MaxRate: 1e6}, {FPS: -1}, {FeedbackHold: -1}, {FeedbackHold: 600000}} {
		if _, err := New(cfg, 0); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// The packet-size law and what follows from it, worked out by hand from
// udp_prague's prague_cc.cpp (after every ACK, integer bytes and packets,
// rounded down):
//
//	size   = rate·vRTT/2 within [150, 1400] B
//	burst  = max(1, rate·250µs/size)
//	window = max(2, W·1.03/size + 1), W = rate·srtt
//
// at 20 ms RTT (vRTT = max(srtt, 25 ms) = 25 ms, W = rate·20 ms).
func TestPacketLaw(t *testing.T) {
	tests := []struct {
		mbit                float64
		size, burst, window int
	}{
		// 12 500 B/s: 12500·0.025/2 = 156.25 -> 156 B; 12500·250e-6 = 3.1 B
		// -> 1; W 250 B: 257.5/156 = 1.65 -> 1+1 = 2.
		{0.1, 156, 1, 2},
		// 62 500 B/s: 781.25 -> 781 B; 15.6 B -> 1; W 1250: 1287.5/781 = 1.65 -> 2.
		{0.5, 781, 1, 2},
		// 125 000 B/s: 1562.5 -> the 1400 B MTU; 31 B -> 1; W 2500: 2575/1400 = 1.84 -> 2.
		{1, 1400, 1, 2},
		// 1.25 MB/s: 15 625 -> 1400; 312.5/1400 = 0.22 -> 1; W 25 000: 25750/1400 = 18.39 -> 19.
		{10, 1400, 1, 19},
		// 6.25 MB/s: 1562.5/1400 = 1.12 -> 1; W 125 000: 128750/1400 = 91.96 -> 92.
		{50, 1400, 1, 92},
		// 12.5 MB/s: 3125/1400 = 2.23 -> 2; W 250 000: 257500/1400 = 183.9 -> 184.
		{100, 1400, 2, 184},
		// 125 MB/s: 31250/1400 = 22.3 -> 22; W 2.5 MB: 2575000/1400 = 1839.3 -> 1840.
		{1000, 1400, 22, 1840},
	}
	for _, tc := range tests {
		cc, err := New(Config{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		cc.srtt, cc.vrtt = 20000, 25000
		cc.rate = tc.mbit * 1e6 / 8
		cc.window = cc.rate * 0.020
		cc.derive()
		got := cc.Info(cc.alphaAt)
		if got.PacketSize != tc.size || got.PacketBurst != tc.burst || got.PacketWindow != tc.window {
			t.Errorf("%v Mbit/s: size %d B, burst %d, window %d; want %d, %d, %d",
				tc.mbit, got.PacketSize, got.PacketBurst, got.PacketWindow, tc.size, tc.burst, tc.window)
		}
		// Pacing: +3 % in the first half vRTT after an alpha update, -3 % after.
		if r := got.PacingRate / cc.rate; math.Abs(r-1.03) > 1e-12 {
			t.Errorf("%v Mbit/s: first-half pacing %.5f of the rate, want 1.03", tc.mbit, r)
		}
		if r := cc.Info(cc.alphaAt+12500).PacingRate / cc.rate; math.Abs(r-1/1.03) > 1e-12 {
			t.Errorf("%v Mbit/s: second-half pacing %.5f of the rate, want 1/1.03", tc.mbit, r)
		}
	}
	// Block feedback held up to 25 ms: the window covers it too. At 10
	// Mbit/s: (25 000 + 1.25e6·0.025)·1.03/1400 = 56 250·1.03/1400 = 41.4 -> 42.
	cc, err := New(Config{FeedbackHold: 25000}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cc.srtt, cc.vrtt, cc.rate, cc.window = 20000, 25000, 1.25e6, 25000
	cc.derive()
	if got := cc.Info(0).PacketWindow; got != 42 {
		t.Errorf("10 Mbit/s with 25 ms block feedback: window %d packets, want 42", got)
	}
	// Frame mode (30 fps): the vRTT floor is a frame interval, 33 333 µs.
	// 30 000 B/s: 30000·0.033333/2 = 499.995 -> 499 B.
	cc, err = New(Config{FPS: 30}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cc.rate = 3e4
	cc.derive()
	if got := cc.Info(0).PacketSize; got != 499 {
		t.Errorf("frame mode at 0.24 Mbit/s: packet size %d B, want 499", got)
	}
}
