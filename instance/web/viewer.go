package web

import (
	"io"

	"github.com/pi2hop/pi2hop/instance"
)

// Viewer is what instance.Options.Web takes: it serves the browser view of
// the running instance as opt says, and returns the server and its URL.
func Viewer(opt Options) func(instance.Live) (io.Closer, string, error) {
	return func(l instance.Live) (io.Closer, string, error) {
		s, err := Serve(opt, Live(l))
		if err != nil {
			return nil, "", err
		}
		return s, s.URL(), nil
	}
}
