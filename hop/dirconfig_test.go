package hop

import (
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
)

func TestDirConfigString(t *testing.T) {
	for _, tc := range []struct {
		d    DirConfig
		want string
	}{
		{DirConfig{Link: shaper.Config{Rate: shaper.Const{BitsPerSecond: 10_000_000}}, Queue: aqm.Spec{Kind: aqm.KindDualPI2}},
			"10mbit dualpi2"},
		{DirConfig{Link: shaper.Config{Rate: shaper.Const{BitsPerSecond: 500_000}, Delay: int64(10 * time.Millisecond), Loss: shaper.IID{P: 0.01}},
			Queue: aqm.Spec{Kind: aqm.KindFIFO}},
			"500kbit delay 10ms loss 1% fifo"},
	} {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}
