package instance

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pi2hop/pi2hop/aqm"
)

// FlagOf names the command-line flag of a Settings key.
func FlagOf(key string) string {
	if st, ok := Lookup(key); ok {
		return st.FlagName()
	}
	return key
}

// FlagError phrases an error of Resolve or Direction about a setting as
// the command line names it, once for every command: the flag and what
// is wrong with its value (--tupdate: 10s not in 1µs..4.294967295s), a
// value auto-tuning derived under the tuning flags given, a default the
// other flags made wrong as the default. s is what was resolved; given
// reports whether a flag was on the command line.
func (s Settings) FlagError(err error, given func(flag string) bool) error {
	var fe *FieldError
	var ce *aqm.ConfigError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &fe) && (fe.Field == "max-rtt" || fe.Field == "typical-rtt"):
		return fmt.Errorf("%s: %w", s.tuneFlags(given), fe.Err)
	case errors.As(err, &fe):
		return fmt.Errorf("--%s: %w", FlagOf(fe.Field), fe.Err)
	case errors.As(err, &ce):
		key := ErrorKey(err)
		switch {
		case s.Tunes(key):
			return fmt.Errorf("%s: %s derived from them: %s", s.tuneFlags(given), FlagOf(key), ce.Range())
		case s.Has(key):
			return fmt.Errorf("--%s: %s", FlagOf(key), ce.Range())
		}
		return fmt.Errorf("--%s (default): %s", FlagOf(key), ce.Range())
	}
	return err
}

// tuneFlags names the auto-tuning flags given, with their values.
func (s Settings) tuneFlags(given func(flag string) bool) string {
	var out []string
	for _, key := range []string{"max-rtt", "typical-rtt"} {
		if st, _ := Lookup(key); given(st.FlagName()) {
			out = append(out, "--"+st.FlagName()+" "+st.Bind(&s).String())
		}
	}
	return strings.Join(out, " ")
}
