package web

import (
	"strings"
	"testing"
)

// --web alone, with a token, or a token without --web; a refused address
// names --web and its value.
func TestNewOptions(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		want        *Options
		err         string
	}{
		{"", "", nil, ""},
		{"", "s3cret", nil, "--web-token: give --web too"},
		{"127.0.0.1:8080", "", &Options{Addr: "127.0.0.1:8080"}, ""},
		{":8080", "s3cret", &Options{Addr: ":8080", Token: "s3cret"}, ""},
		{"localhost", "", nil, `--web "localhost": want host:port`},
	} {
		got, err := NewOptions(tc.addr, tc.token)
		if (err == nil) != (tc.err == "") || err != nil && !strings.HasPrefix(err.Error(), tc.err) {
			t.Errorf("NewOptions(%q, %q): error %v, want one starting %q", tc.addr, tc.token, err, tc.err)
		}
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("NewOptions(%q, %q) = %+v, want %+v", tc.addr, tc.token, got, tc.want)
		}
		if (Viewer(got) == nil) != (got == nil) {
			t.Errorf("Viewer(%+v): nil is %v", got, Viewer(got) == nil)
		}
	}
}
