package netsys

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/internal/roottest"
)

// TestLinkIn: in a namespace with a veth pair, a0 holding 10.9.1.2/24
// and fd09::2/64 and a1 10.9.2.2/24, LinkIn finds each side by a prefix
// or an address, not by a prefix no address is in (after waiting), and
// refuses a prefix both sides hold an address in.
func TestLinkIn(t *testing.T) {
	roottest.Need(t)
	t.Parallel()
	j := NewJournal(nil)
	t.Cleanup(func() { j.Undo() })
	ns := roottest.Name("p2w")
	if err := j.NewNamespace(ns); err != nil {
		t.Fatal(err)
	}
	if err := j.AddVeth(ns, "a0", ns, "a1"); err != nil {
		t.Fatal(err)
	}
	for _, a := range []struct{ dev, p string }{{"a0", "10.9.1.2/24"}, {"a0", "fd09::2/64"}, {"a1", "10.9.2.2/24"}} {
		if err := j.AddAddr(ns, a.dev, netip.MustParsePrefix(a.p)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		prefix string
		want   string // the link, or a part of the error
	}{
		{"10.9.1.0/24", "a0"},
		{"10.9.1.2/32", "a0"},
		{"10.9.1.77/24", "a0"}, // the host bits do not matter
		{"fd09::/64", "a0"},
		{"10.9.2.0/24", "a1"},
		{"10.9.3.0/24", "no interface with an address in 10.9.3.0/24 appeared within 200ms"},
		{"10.9.0.0/16", "both hold an address in 10.9.0.0/16"},
	} {
		var got string
		var err error
		start := time.Now()
		Do(ns, func() error {
			got, err = LinkIn(context.Background(), netip.MustParsePrefix(tt.prefix), 200*time.Millisecond)
			return nil
		})
		var me *MissingLinkError
		switch {
		case err == nil && got != tt.want:
			t.Errorf("LinkIn(%s) = %s, want %s", tt.prefix, got, tt.want)
		case err != nil && !strings.Contains(err.Error(), tt.want):
			t.Errorf("LinkIn(%s): %v, want an error saying %q", tt.prefix, err, tt.want)
		case errors.As(err, &me) && time.Since(start) < 200*time.Millisecond:
			t.Errorf("LinkIn(%s) gave up after %v, before its 200ms", tt.prefix, time.Since(start))
		}
	}
}
