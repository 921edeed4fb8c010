package instance

import (
	"testing"

	"github.com/pi2hop/pi2hop/shaper"
)

// Per-direction loss: up-loss and down-loss win over loss for their own
// direction, a bare number is a percentage (netem's "loss 1" is 1 %), and
// a set request naming one direction's loss leaves the other's running
// model (with its state) in place.
func TestDirectionLoss(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name     string
		s        Settings
		up, down string // the models' String; "" none
	}{
		{"both", Settings{Loss: str("1")}, "1%", "1%"},
		{"fraction is a percentage", Settings{Loss: str("0.01")}, "0.01%", "0.01%"},
		{"up only", Settings{UpLoss: str("2%")}, "2%", ""},
		{"down over both", Settings{Loss: str("1"), DownLoss: str("ge:p=1,r=30")}, "1%", "ge:p=1%,r=30%,h=0%,k=100%"},
	}
	for _, tt := range tests {
		c, err := tt.s.Resolve("t")
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		for _, d := range []struct {
			dir  string
			loss shaper.Loss
			want string
		}{{"up", c.Up.Link.Loss, tt.up}, {"down", c.Down.Link.Loss, tt.down}} {
			got := ""
			if d.loss != nil {
				got = d.loss.(interface{ String() string }).String()
			}
			if got != d.want {
				t.Errorf("%s: %s loss %q, want %q", tt.name, d.dir, got, d.want)
			}
		}
	}

	base := Settings{Loss: str("ge:p=1,r=30")}
	cur, err := base.Resolve("t")
	if err != nil {
		t.Fatal(err)
	}
	next, _, err := PlanSet(base, Settings{UpLoss: str("5")}, cur)
	if err != nil {
		t.Fatal(err)
	}
	if next.Down.Link.Loss != cur.Down.Link.Loss {
		t.Errorf("set --up-loss replaced the downlink's running model")
	}
	if got := next.Up.Link.Loss.(interface{ String() string }).String(); got != "5%" {
		t.Errorf("set --up-loss 5: uplink loss %s, want 5%%", got)
	}
	if _, err := (Settings{DownLoss: str("150")}).Resolve("t"); ErrorKey(err) != "down-loss" {
		t.Errorf("down-loss 150: error %v names %q, want down-loss", err, ErrorKey(err))
	}
}
