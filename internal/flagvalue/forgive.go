package flagvalue

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/pi2hop/pi2hop/shaper"
	"github.com/spf13/pflag"
)

// BareValue catches an optional-value flag (--web, whose value may be
// left out) given without "=" and followed by a separate word that reads
// as its value: pflag takes such a word as an argument (for shell, the
// command to run), which is not what the user meant. A word that is a
// command (isCommand, e.g. found on PATH) is left alone. The error
// suggests the spelling that works: "--web 127.0.0.1:8080: did you mean
// --web=127.0.0.1:8080?".
func BareValue(fs *pflag.FlagSet, args []string, isCommand func(string) bool) error {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--" {
			return nil
		}
		name, ok := strings.CutPrefix(args[i], "--")
		if !ok || strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil || f.NoOptDefVal == "" || f.Value.Type() == "bool" {
			continue
		}
		w := args[i+1]
		if strings.HasPrefix(w, "-") || !sameShape(f.NoOptDefVal, w) || isCommand(w) {
			continue
		}
		return fmt.Errorf("--%s %s: did you mean --%s=%s? (a value of --%s follows \"=\"; alone, --%s means %s and the next word is an argument)",
			name, w, name, w, name, name, f.NoOptDefVal)
	}
	return nil
}

// sameShape reports whether word reads as a value of the kind def is:
// both host:port addresses (or :port), or both the same word.
func sameShape(def, word string) bool {
	if isHostPort(def) {
		return isHostPort(word)
	}
	return def == word
}

func isHostPort(s string) bool {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return false
	}
	_, err = strconv.ParseUint(port, 10, 16)
	return err == nil
}

// ByteRateWarnings are the warnings for rates given in tc's byte units
// (10mbps, 10MBps: bytes per second, 8 times the bits an iperf3 or
// speed-test user means by Mbps) among args, one per rate flag of fs
// (type "rate") so given. They are warnings, not refusals: tc means
// exactly that, and someone may mean it too.
func ByteRateWarnings(fs *pflag.FlagSet, args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "--" {
			break
		}
		name, ok := strings.CutPrefix(args[i], "--")
		if !ok {
			continue
		}
		name, val, hasVal := strings.Cut(name, "=")
		f := fs.Lookup(name)
		if f == nil || f.Value.Type() != "rate" {
			continue
		}
		if !hasVal && f.NoOptDefVal == "" && i+1 < len(args) {
			i++
			val = args[i]
		}
		if w := byteRateWarning(name, val); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// byteRateWarning is the warning for rate flag name given val, or "" when
// val is not in a byte unit: "--rate 10mbps is 80 Mbit/s (tc: bytes per
// second); write 10mbit for 10 Mbit/s".
func byteRateWarning(name, val string) string {
	t := strings.TrimSpace(val)
	num, unit := splitNumber(t)
	prefix, isBytes := strings.CutSuffix(strings.ToLower(unit), "bps")
	if num == "" || !isBytes {
		return ""
	}
	bps, err := shaper.ParseRate(t)
	if err != nil {
		return ""
	}
	meant, err := shaper.ParseRate(num + prefix + "bit")
	if err != nil {
		return ""
	}
	return fmt.Sprintf("--%s %s is %s (tc: bytes per second); write %s%sbit for %s",
		name, val, bitsWords(bps), num, prefix, bitsWords(meant))
}

// splitNumber splits "10mbps" into "10" and "mbps".
func splitNumber(s string) (num, unit string) {
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	return s[:i], s[i:]
}

// bitsWords is a rate as a person reads it: 80 Mbit/s, 1.5 Gbit/s.
func bitsWords(bps uint64) string {
	f := float64(bps)
	for _, u := range []struct {
		scale float64
		name  string
	}{{1e12, "Tbit/s"}, {1e9, "Gbit/s"}, {1e6, "Mbit/s"}, {1e3, "kbit/s"}} {
		if f >= u.scale {
			return strconv.FormatFloat(f/u.scale, 'g', 6, 64) + " " + u.name
		}
	}
	return strconv.FormatFloat(f, 'g', 6, 64) + " bit/s"
}
