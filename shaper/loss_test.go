package shaper

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestIIDRate(t *testing.T) {
	const n = 100_000
	for _, p := range []float64{0.001, 0.01, 0.1, 0.5, 1} {
		rng := rand.New(rand.NewPCG(7, 0x5eed))
		lost := 0
		for range n {
			if (IID{P: p}).Lose(rng) {
				lost++
			}
		}
		got := float64(lost) / n
		tol := 5*math.Sqrt(p*(1-p)/n) + 1e-9
		if math.Abs(got-p) > tol {
			t.Errorf("IID{%g}: lost %.5f of %d; want within %.5f", p, got, n, tol)
		}
	}
}

// A lossless model must not consume randomness: the AQM may share the rng.
func TestIIDZeroDrawsNothing(t *testing.T) {
	a, b := rand.New(rand.NewPCG(1, 1)), rand.New(rand.NewPCG(1, 1))
	for range 10 {
		if (IID{}).Lose(a) {
			t.Fatal("IID{0} lost a packet")
		}
	}
	if a.Uint64() != b.Uint64() {
		t.Error("IID{0} drew from rng")
	}
}

func TestGilbertElliott(t *testing.T) {
	const n = 500_000
	tests := []struct {
		g         GilbertElliott
		wantLoss  float64 // stationary: πG·LossGood + πB·LossBad, πB = P/(P+R)
		wantBurst float64 // mean run of consecutive losses; 0 = not checked
	}{
		{GilbertElliott{P: 0.01, R: 0.3, LossBad: 1}, 0.01 / 0.31, 1 / 0.3},
		{GilbertElliott{P: 0.05, R: 0.5, LossBad: 1}, 0.05 / 0.55, 2},
		{GilbertElliott{P: 0.1, R: 0.4, LossGood: 0.1, LossBad: 0.5}, 0.8*0.1 + 0.2*0.5, 0},
	}
	for _, tt := range tests {
		g := tt.g
		rng := rand.New(rand.NewPCG(11, 0x5eed))
		lost, bursts, run := 0, 0, 0
		for range n {
			if g.Lose(rng) {
				lost++
				run++
			} else if run > 0 {
				bursts++
				run = 0
			}
		}
		loss := float64(lost) / n
		if math.Abs(loss-tt.wantLoss) > 0.05*tt.wantLoss {
			t.Errorf("%v: loss %.4f; want %.4f ± 5%%", &g, loss, tt.wantLoss)
		}
		if tt.wantBurst > 0 {
			burst := float64(lost) / float64(bursts)
			if math.Abs(burst-tt.wantBurst) > 0.05*tt.wantBurst {
				t.Errorf("%v: mean burst %.3f; want %.3f ± 5%%", &g, burst, tt.wantBurst)
			}
		}
	}
}

func TestParseLoss(t *testing.T) {
	tests := []struct {
		in   string
		want string // String() of the result
	}{
		{"0", "0%"},
		{"1%", "1%"},
		// netem's parse_percent: a bare number is a percentage.
		{"1", "1%"},
		{"0.01", "0.01%"},
		{" 2.5% ", "2.5%"},
		{"100", "100%"},
		{"ge:p=1%,r=30%", "ge:p=1%,r=30%,h=0%,k=100%"},
		{"GE:p=1, r=30, h=10%, k=99%", "ge:p=1%,r=30%,h=10%,k=99%"},
	}
	for _, tt := range tests {
		l, err := ParseLoss(tt.in)
		if err != nil {
			t.Errorf("ParseLoss(%q): %v", tt.in, err)
			continue
		}
		if got := l.(interface{ String() string }).String(); got != tt.want {
			t.Errorf("ParseLoss(%q) = %s; want %s", tt.in, got, tt.want)
		}
	}
	g, _ := ParseLoss("ge:p=1%,r=30%,h=10%,k=99%")
	if ge := g.(*GilbertElliott); ge.LossBad != 0.9 || math.Abs(ge.LossGood-0.01) > 1e-12 {
		t.Errorf("h/k mapping: %+v; want LossBad 0.9, LossGood 0.01", *ge)
	}
}

func TestParseLossErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `"": "" is not a number (want a percentage as netem reads it: 1% or 1 (both 1 %), 0.01 (0.01 %), or Gilbert-Elliott ge:p=1%,r=30%[,h=0%,k=100%])`},
		{"101", `"101": not within 0%..100%`},
		{"101%", `"101%": not within 0%..100%`},
		{"-1%", `"-1%": not within 0%..100%`},
		{"lots", `"lots": "lots" is not a number`},
		{"NaN", `"NaN": "NaN" is not a number`},
		{"ge:p=1%", `"ge:p=1%": p and r are required`},
		{"ge:p=1%,r", `"ge:p=1%,r": "r" is not key=value`},
		{"ge:p=1%,r=200", `"ge:p=1%,r=200": r: not within 0%..100%`},
		{"ge:p=1%,r=3%,x=1", `"ge:p=1%,r=3%,x=1": unknown parameter "x" (want p, r, h, k)`},
		{"ge:p=1%,p=2%,r=3%", `"ge:p=1%,p=2%,r=3%": p given twice`},
	}
	for _, tt := range tests {
		_, err := ParseLoss(tt.in)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("ParseLoss(%q) error = %v; want prefix %s", tt.in, err, tt.want)
		}
	}
}
