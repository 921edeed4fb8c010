// Package flagvalue holds the pflag.Value types of pi2hop's command line:
// tc rates, sizes and packet counts, durations, ranges, PI gains,
// step_thresh, word choices, loss models, jitter and aggregation. Each
// parses at Set time, so a bad value fails while the command line is
// parsed; the error says what is accepted, and the caller prefixes it
// with the flag and the value given:
//
//	--rate "10mb": unknown unit "mb" (want bit, kbit, mbit, ...)
//
// A value's zero or default is the caller's to set in the literal.
package flagvalue

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
)

// Rate is a rate in tc(8) units (10mbit, 1gbit, 500kbit, 1mbps), in bit/s.
type Rate struct{ BPS uint64 }

func (v *Rate) Set(s string) error {
	if isBareNumber(s) {
		// tc(8) reads a bare rate as bit/s: "--rate 10" would be a 10 bit/s
		// link, which nobody means, so a unit is required.
		return fmt.Errorf("%q: give a unit, e.g. %smbit (tc would read a bare number as bit/s)", s, strings.TrimSpace(s))
	}
	bps, err := shaper.ParseRate(s)
	if err != nil {
		return err
	}
	if bps == 0 {
		return errors.New("must be more than 0 bit/s")
	}
	v.BPS = bps
	return nil
}

func (v *Rate) String() string {
	if v.BPS == 0 {
		return "" // unset (a per-direction rate falling back to --rate)
	}
	return shaper.FormatRate(v.BPS)
}
func (v *Rate) Type() string { return "rate" }

// LinkRate is a link's rate: a Rate, or "unlimited" for no shaping
// (shaper.Unlimited: the Mac's tbr 0), which instance.Settings carries as
// 0 bit/s.
type LinkRate struct {
	Rate
	Unlimited bool
}

func (v *LinkRate) Set(s string) error {
	if strings.EqualFold(strings.TrimSpace(s), shaper.UnlimitedName) {
		v.BPS, v.Unlimited = 0, true
		return nil
	}
	v.Unlimited = false
	return v.Rate.Set(s)
}

func (v *LinkRate) String() string {
	if v.Unlimited {
		return shaper.UnlimitedName
	}
	return v.Rate.String()
}

// Size is a byte count in tc(8) units (64k, 32m, 1500b); tc's k is 1024.
// Zero means "not given"; Set rejects 0 and anything above Max.
type Size struct {
	Bytes uint64
	Max   uint64
}

func (v *Size) Set(s string) error {
	n, err := shaper.ParseSize(s)
	if err != nil {
		return err
	}
	if n == 0 || n > v.Max {
		return fmt.Errorf("must be in 1..%d bytes", v.Max)
	}
	v.Bytes = n
	return nil
}

func (v *Size) String() string {
	if v.Bytes == 0 {
		return ""
	}
	return strconv.FormatUint(v.Bytes, 10) + "b"
}
func (v *Size) Type() string { return "size" }

// Duration is a time as ParseDuration reads it (10ms, 1.5s, 250us,
// 10msec) no smaller than Min.
// An Optional one prints as "" while unset, so help shows no default.
type Duration struct {
	D        time.Duration
	Min      time.Duration
	Optional bool
}

func (v *Duration) Set(s string) error {
	d, err := ParseDuration(s)
	if err != nil {
		return err
	}
	if d < v.Min {
		if v.Min == 0 {
			return errors.New("must not be negative")
		}
		return fmt.Errorf("must be at least %v", v.Min)
	}
	v.D = d
	return nil
}

func (v *Duration) String() string {
	if v.Optional && v.D == 0 {
		return ""
	}
	return v.D.String()
}
func (v *Duration) Type() string { return "duration" }

// CPULatency is hop.Config.CPULatency: "off" (no request) or a
// duration from 0 (idle CPUs poll) to 1s.
type CPULatency struct{ D time.Duration }

func (v *CPULatency) Set(s string) error {
	if s == "off" {
		v.D = -1
		return nil
	}
	d, err := ParseDuration(s)
	if err != nil || d < 0 || d > time.Second {
		return errors.New(`want "off" or a duration from 0 to 1s, like 0 or 20us`)
	}
	v.D = d
	return nil
}

func (v *CPULatency) String() string {
	if v.D < 0 {
		return "off"
	}
	return v.D.String()
}
func (v *CPULatency) Type() string { return "duration|off" }

// Count is a packet count, optionally written with tc's p suffix
// ("100" or "100p"), in Min..Max.
type Count struct {
	N        uint32
	Min, Max uint32
	Of       string // what is counted, for errors: "bytes", "buckets"; "" for packets
}

func (v *Count) Set(s string) error {
	n, _, err := shaper.ParsePackets(s)
	if (err != nil || n < v.Min || n > v.Max) && v.Of != "" {
		return fmt.Errorf("want a number of %s in %d..%d", v.Of, v.Min, v.Max)
	}
	if err != nil || n < v.Min || n > v.Max {
		return fmt.Errorf("want a packet count in %d..%d, like 100 or 100p", v.Min, v.Max)
	}
	v.N = n
	return nil
}

func (v *Count) String() string { return strconv.FormatUint(uint64(v.N), 10) }
func (v *Count) Type() string   { return "packets" }

// IntRange is an integer in Min..Max (coupling 1..255, classic
// protection 0..100 %, MTU).
type IntRange struct {
	N        int
	Min, Max int
	Unit     string // appended to the range in errors: "%"
}

func (v *IntRange) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSuffix(s, v.Unit))
	if err != nil || n < v.Min || n > v.Max {
		if err == nil {
			return fmt.Errorf("must be in %d..%d%s", v.Min, v.Max, v.Unit)
		}
		return fmt.Errorf("want a whole number in %d..%d%s", v.Min, v.Max, v.Unit)
	}
	v.N = n
	return nil
}

func (v *IntRange) String() string { return strconv.Itoa(v.N) }
func (v *IntRange) Type() string   { return "int" }

// Gain is a PI gain in Hz, held as tc sends it over netlink:
// trunc(Hz·256), which must land in 1..2^31-1 (sch_dualpi2's policy).
type Gain struct{ Netlink uint32 }

func (v *Gain) Set(s string) error {
	hz, err := strconv.ParseFloat(s, 64)
	nl, ok := aqm.GainFromHz(hz)
	if err != nil || !ok {
		return fmt.Errorf("want a frequency in Hz from 1/256 (0.00390625) to %d, like 0.16", aqm.MaxGainHz)
	}
	v.Netlink = nl
	return nil
}

func (v *Gain) String() string {
	return strconv.FormatFloat(aqm.GainHz(v.Netlink), 'g', -1, 64)
}
func (v *Gain) Type() string { return "Hz" }

// Step is tc-dualpi2's step_thresh: a sojourn time (1ms) or, with a
// packet suffix (3p, 3pkts, 3packets), an L-queue length. One flag holds
// both forms, so "both given" cannot happen here. Settings carry it as it
// is (JSON).
type Step struct {
	Time      time.Duration `json:"time,omitempty"`
	Packets   uint32        `json:"packets,omitempty"`
	InPackets bool          `json:"in_packets,omitempty"`
}

func (v *Step) Set(s string) error {
	if n, suffixed, err := shaper.ParsePackets(s); err == nil && suffixed {
		*v = Step{Packets: n, InPackets: true}
		return nil
	}
	d, err := ParseDuration(s)
	if err != nil || d < 0 || d > math.MaxUint32 {
		// The kernel keeps step_thresh in a u32 of ns: at most ~4.29 s.
		return errors.New("want a duration like 1ms or a packet count like 3p (a duration at most 4.29s)")
	}
	*v = Step{Time: d}
	return nil
}

func (v *Step) String() string {
	if v.InPackets {
		return strconv.FormatUint(uint64(v.Packets), 10) + "p"
	}
	return v.Time.String()
}
func (v *Step) Type() string { return "duration|Np" }

// Choice is one word out of a fixed list. Aliases maps other accepted
// spellings (tc's keywords) to a canonical choice.
type Choice struct {
	Val     string
	Choices []string
	Aliases map[string]string
	// More, when set, lists further choices that are looked up only when
	// needed (the user's own profiles, read from files).
	More func() []string
}

func (v *Choice) Set(s string) error {
	if a, ok := v.Aliases[s]; ok {
		s = a
	}
	if slices.Contains(v.Choices, s) {
		v.Val = s
		return nil
	}
	if v.More == nil {
		return fmt.Errorf("want one of %s", strings.Join(v.Choices, ", "))
	}
	more := v.More()
	if slices.Contains(more, s) {
		v.Val = s
		return nil
	}
	if len(more) == 0 {
		return fmt.Errorf("want one of %s", strings.Join(v.Choices, ", "))
	}
	return fmt.Errorf("want one of %s; or yours: %s", strings.Join(v.Choices, ", "), strings.Join(more, ", "))
}

func (v *Choice) String() string { return v.Val }
func (v *Choice) Type() string   { return strings.Join(v.Choices, "|") }

// Words lists the canonical choices, for shell completion (aliases are
// old or tc spellings, not offered).
func (v *Choice) Words() []string {
	if v.More == nil {
		return v.Choices
	}
	return append(slices.Clone(v.Choices), v.More()...)
}

// Loss is a loss model as shaper.ParseLoss reads it ("1%", "0.01",
// "ge:p=1%,r=30%"). It keeps the text: Gilbert–Elliott has state, so each
// direction parses its own instance.
type Loss struct{ Text string }

func (v *Loss) Set(s string) error {
	if _, err := shaper.ParseLoss(s); err != nil {
		return err
	}
	v.Text = s
	return nil
}

func (v *Loss) String() string { return v.Text }
func (v *Loss) Type() string   { return "loss" }

// ECNFault is an ECN path fault as shaper.ParseFault reads it
// ("bleach", "ce-bleach,after", "mangle,after=2s,share=30%"), kept in the
// form it prints, so a set request and the state file carry one spelling.
type ECNFault struct{ Text string }

func (v *ECNFault) Set(s string) error {
	f, err := shaper.ParseFault(s)
	if err != nil {
		return err
	}
	v.Text = f.String()
	return nil
}

func (v *ECNFault) String() string { return v.Text }
func (v *ECNFault) Type() string   { return "fault" }

// Words are the fault kinds, for shell completion.
func (v *ECNFault) Words() []string { return shaper.FaultKinds() }

// Bool is a switch: --nqb alone means true, --nqb=false false. It reads
// and prints as pflag's own boolean flags do.
type Bool struct{ B bool }

func (v *Bool) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("must be true or false")
	}
	v.B = b
	return nil
}

func (v *Bool) String() string   { return strconv.FormatBool(v.B) }
func (v *Bool) Type() string     { return "bool" }
func (v *Bool) IsBoolFlag() bool { return true }

// Text is any string, taken as given (a file name, tc's VALUE/MASK).
type Text struct{ S string }

func (v *Text) Set(s string) error { v.S = s; return nil }
func (v *Text) String() string     { return v.S }
func (v *Text) Type() string       { return "string" }

// Uint64 is a whole number in Go's syntax (10, 0x1f, 0o17), as pflag's
// uint64 flags read it.
type Uint64 struct{ N uint64 }

func (v *Uint64) Set(s string) error {
	n, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return errors.New("must be a non-negative integer")
	}
	v.N = n
	return nil
}

func (v *Uint64) String() string { return strconv.FormatUint(v.N, 10) }
func (v *Uint64) Type() string   { return "uint64" }
