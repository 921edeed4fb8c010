package pcap

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestAnalyzeOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		opt  AnalyzeOptions
		want string // "" = valid
	}{
		{AnalyzeOptions{Bin: time.Microsecond, CouplingK: 255}, ""},
		{AnalyzeOptions{Bin: time.Second, CouplingK: 0.5}, ""},
		{AnalyzeOptions{Bin: 0, CouplingK: 2}, "bin 0s: must be at least 1µs"},
		{AnalyzeOptions{Bin: 999 * time.Nanosecond, CouplingK: 2}, "bin 999ns: must be at least 1µs"},
		{AnalyzeOptions{Bin: time.Second, CouplingK: 0}, "coupling 0: must be in (0, 255], as sch_dualpi2's k"},
		{AnalyzeOptions{Bin: time.Second, CouplingK: 255.5}, "coupling 255.5: must be in (0, 255], as sch_dualpi2's k"},
		{AnalyzeOptions{Bin: time.Second, CouplingK: math.NaN()}, "coupling NaN: must be in (0, 255], as sch_dualpi2's k"},
	} {
		err := tc.opt.Validate()
		var oe *OptionError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.opt, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want || !errors.As(err, &oe)):
			t.Errorf("%+v: %v, want *OptionError %q", tc.opt, err, tc.want)
		}
	}
	// The zero value is usable: NewAnalyzer fills in 1s and k = 2 first.
	if _, err := NewAnalyzer(AnalyzeOptions{}); err != nil {
		t.Errorf("NewAnalyzer of the zero value: %v", err)
	}
}
