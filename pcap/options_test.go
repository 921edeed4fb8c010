package pcap

import (
	"errors"
	"testing"
)

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
