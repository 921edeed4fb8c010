package check

import "testing"

func TestParseTarget(t *testing.T) {
	for _, c := range []struct {
		in   string
		host string
		port uint16
		ok   bool
	}{
		{"192.0.2.1", "192.0.2.1", DefaultPort, true},
		{"192.0.2.1:80", "192.0.2.1", 80, true},
		{"2001:db8::1", "2001:db8::1", DefaultPort, true},
		{"[2001:db8::1]", "2001:db8::1", DefaultPort, true},
		{"[2001:db8::1]:7", "2001:db8::1", 7, true},
		{"example.net", "example.net", DefaultPort, true},
		{"example.net:65535", "example.net", 65535, true},
		{"", "", 0, false},
		{"[::1", "", 0, false},
		{"example.net:0", "", 0, false},
		{"example.net:65536", "", 0, false},
		{"example.net:http", "", 0, false},
		{":9332", "", 0, false},
	} {
		h, p, err := ParseTarget(c.in)
		if (err == nil) != c.ok || h != c.host || p != c.port {
			t.Errorf("ParseTarget(%q) = %q, %d, %v; want %q, %d, ok %v", c.in, h, p, err, c.host, c.port, c.ok)
		}
	}
}
