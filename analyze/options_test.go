package analyze

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/pcap"
)

func TestAnalyzeOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		opt  Options
		want string // "" = valid
	}{
		{Options{Bin: time.Microsecond, CouplingK: 255}, ""},
		{Options{Bin: time.Second, CouplingK: 0.5}, ""},
		{Options{Bin: 0, CouplingK: 2}, "bin 0s: must be at least 1µs"},
		{Options{Bin: 999 * time.Nanosecond, CouplingK: 2}, "bin 999ns: must be at least 1µs"},
		{Options{Bin: time.Second, CouplingK: 0}, "coupling 0: must be in (0, 255], as sch_dualpi2's k"},
		{Options{Bin: time.Second, CouplingK: 255.5}, "coupling 255.5: must be in (0, 255], as sch_dualpi2's k"},
		{Options{Bin: time.Second, CouplingK: math.NaN()}, "coupling NaN: must be in (0, 255], as sch_dualpi2's k"},
	} {
		// Refused with a *pcap.OptionError, which the CLI turns into the flag's name.
		err := tc.opt.Validate()
		var oe *pcap.OptionError
		if (tc.want == "") != (err == nil) || err != nil && (err.Error() != tc.want || !errors.As(err, &oe)) {
			t.Errorf("%+v: %v, want %q", tc.opt, err, tc.want)
		}
	}
	// The zero value is usable: New fills in 1s and k = 2 first.
	if _, err := New(Options{}); err != nil {
		t.Errorf("New of the zero value: %v", err)
	}
}
