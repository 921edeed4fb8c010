package web

import (
	"errors"
	"fmt"
	"io"

	"github.com/pi2hop/pi2hop/instance"
)

// NewOptions checks what --web and --web-token ask: nil without an
// address, an error for a token without one (the token guards the view)
// or an address ListenAddr refuses.
func NewOptions(addr, token string) (*Options, error) {
	if addr == "" {
		if token != "" {
			return nil, errors.New("--web-token: give --web too (the token guards the browser view)")
		}
		return nil, nil
	}
	if _, err := ListenAddr(addr); err != nil {
		return nil, fmt.Errorf("--web %q: %v", addr, err)
	}
	return &Options{Addr: addr, Token: token}, nil
}

// Viewer is what instance.Options.Web takes: it serves the browser view of
// the running instance as opt says, and returns the server and its URL.
// It is nil when opt is: no view.
func Viewer(opt *Options) func(instance.Live) (io.Closer, string, error) {
	if opt == nil {
		return nil
	}
	return func(l instance.Live) (io.Closer, string, error) {
		s, err := Serve(*opt, Live(l))
		if err != nil {
			return nil, "", err
		}
		return s, s.URL(), nil
	}
}
