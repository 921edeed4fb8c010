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
		checkOptionError(t, tc.opt, tc.opt.Validate(), tc.want)
	}
	// The zero value is usable: NewAnalyzer fills in 1s and k = 2 first.
	if _, err := NewAnalyzer(AnalyzeOptions{}); err != nil {
		t.Errorf("NewAnalyzer of the zero value: %v", err)
	}
}

// A capture's snaplen and rotation size as a CLI gives them: libpcap's
// MAXIMUM_SNAPLEN, and room for the section and interface headers.
func TestCaptureOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		opt  Options
		want string // "" = valid
	}{
		{Options{Snaplen: 1}, ""},
		{Options{Snaplen: 262144, MaxSize: 4096}, ""},
		{Options{Snaplen: 0}, "snaplen 0: must be in 1..262144 bytes"},
		{Options{Snaplen: 262145}, "snaplen 262145: must be in 1..262144 bytes"},
		{Options{Snaplen: 128, MaxSize: 4095}, "capture-max-size 4095: must be at least 4096 bytes"},
	} {
		checkOptionError(t, tc.opt, tc.opt.Validate(), tc.want)
	}
}

// checkOptionError fails unless err is nil when want is "", else an
// *OptionError saying want.
func checkOptionError(t *testing.T, opt any, err error, want string) {
	t.Helper()
	var oe *OptionError
	switch {
	case want == "" && err != nil:
		t.Errorf("%+v: %v", opt, err)
	case want != "" && (err == nil || err.Error() != want || !errors.As(err, &oe)):
		t.Errorf("%+v: %v, want *OptionError %q", opt, err, want)
	}
}
