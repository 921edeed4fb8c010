package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
)

// pflag.Value types for the link and AQM flags. Each parses at Set time, so
// a bad value fails while the command line is parsed; the error says what
// is accepted, and cli.go prefixes it with the flag and the value given:
//
//	--rate "10mb": unknown unit "mb" (want bit, kbit, mbit, ...)

// rateValue is a rate in tc(8) units (10mbit, 1gbit, 500kbit, 1mbps), in bit/s.
type rateValue struct{ bps uint64 }

func (v *rateValue) Set(s string) error {
	bps, err := shaper.ParseRate(s)
	if err != nil {
		return err
	}
	if bps == 0 {
		return errors.New("must be more than 0 bit/s")
	}
	v.bps = bps
	return nil
}

func (v *rateValue) String() string {
	if v.bps == 0 {
		return "" // unset (a per-direction rate falling back to --rate)
	}
	return shaper.FormatRate(v.bps)
}
func (v *rateValue) Type() string { return "rate" }

// sizeValue is a byte count in tc(8) units (64k, 32m, 1500b); tc's k is 1024.
// Zero means "not given"; Set rejects 0 and anything above max.
type sizeValue struct {
	bytes uint64
	max   uint64
}

func (v *sizeValue) Set(s string) error {
	n, err := shaper.ParseSize(s)
	if err != nil {
		return err
	}
	if n == 0 || n > v.max {
		return fmt.Errorf("must be in 1..%d bytes", v.max)
	}
	v.bytes = n
	return nil
}

func (v *sizeValue) String() string {
	if v.bytes == 0 {
		return ""
	}
	return strconv.FormatUint(v.bytes, 10) + "b"
}
func (v *sizeValue) Type() string { return "size" }

// durationValue is a Go duration (10ms, 1.5s, 250us) no smaller than min.
// An optional one prints as "" while unset, so help shows no default.
type durationValue struct {
	d        time.Duration
	min      time.Duration
	optional bool
}

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration like 10ms, 250us or 1.5s")
	}
	if d < v.min {
		if v.min == 0 {
			return errors.New("must not be negative")
		}
		return fmt.Errorf("must be at least %v", v.min)
	}
	v.d = d
	return nil
}

func (v *durationValue) String() string {
	if v.optional && v.d == 0 {
		return ""
	}
	return v.d.String()
}
func (v *durationValue) Type() string { return "duration" }

// cpuLatencyValue is hop.Config.CPULatency: "off" (no request) or a
// duration from 0 (idle CPUs poll) to 1s.
type cpuLatencyValue struct{ d time.Duration }

func (v *cpuLatencyValue) Set(s string) error {
	if s == "off" {
		v.d = -1
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > time.Second {
		return errors.New(`want "off" or a duration from 0 to 1s, like 0 or 20us`)
	}
	v.d = d
	return nil
}

func (v *cpuLatencyValue) String() string {
	if v.d < 0 {
		return "off"
	}
	return v.d.String()
}
func (v *cpuLatencyValue) Type() string { return "duration|off" }

// countValue is a packet count, optionally written with tc's p suffix
// ("100" or "100p"), in min..max.
type countValue struct {
	n        uint32
	min, max uint32
}

func (v *countValue) Set(s string) error {
	n, _, err := shaper.ParsePackets(s)
	if err != nil || n < v.min || n > v.max {
		return fmt.Errorf("want a packet count in %d..%d, like 100 or 100p", v.min, v.max)
	}
	v.n = n
	return nil
}

func (v *countValue) String() string { return strconv.FormatUint(uint64(v.n), 10) }
func (v *countValue) Type() string   { return "packets" }

// intRangeValue is an integer in min..max (coupling 1..255, classic
// protection 0..100 %, MTU).
type intRangeValue struct {
	n        int
	min, max int
	unit     string // appended to the range in errors: "%"
}

func (v *intRangeValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSuffix(s, v.unit))
	if err != nil || n < v.min || n > v.max {
		if err == nil {
			return fmt.Errorf("must be in %d..%d%s", v.min, v.max, v.unit)
		}
		return fmt.Errorf("want a whole number in %d..%d%s", v.min, v.max, v.unit)
	}
	v.n = n
	return nil
}

func (v *intRangeValue) String() string { return strconv.Itoa(v.n) }
func (v *intRangeValue) Type() string   { return "int" }

// gainValue is a PI gain in Hz, held as tc sends it over netlink:
// trunc(Hz·256), which must land in 1..2^31-1 (sch_dualpi2's policy).
type gainValue struct{ netlink uint32 }

func (v *gainValue) Set(s string) error {
	hz, err := strconv.ParseFloat(s, 64)
	nl, ok := aqm.GainFromHz(hz)
	if err != nil || !ok {
		return fmt.Errorf("want a frequency in Hz from 1/256 (0.00390625) to %d, like 0.16", aqm.MaxGainHz)
	}
	v.netlink = nl
	return nil
}

func (v *gainValue) String() string {
	return strconv.FormatFloat(aqm.GainHz(v.netlink), 'g', -1, 64)
}
func (v *gainValue) Type() string { return "Hz" }

// stepValue is tc-dualpi2's step_thresh: a sojourn time (1ms) or, with a
// packet suffix (3p, 3pkts, 3packets), an L-queue length. One flag holds
// both forms, so "both given" cannot happen here.
type stepValue struct {
	ns      int64 // time threshold
	packets uint32
	inPkts  bool
}

func (v *stepValue) Set(s string) error {
	if n, suffixed, err := shaper.ParsePackets(s); err == nil && suffixed {
		*v = stepValue{packets: n, inPkts: true}
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > math.MaxUint32 {
		// The kernel keeps step_thresh in a u32 of ns: at most ~4.29 s.
		return errors.New("want a duration like 1ms or a packet count like 3p (a duration at most 4.29s)")
	}
	*v = stepValue{ns: int64(d)}
	return nil
}

func (v *stepValue) String() string {
	if v.inPkts {
		return strconv.FormatUint(uint64(v.packets), 10) + "p"
	}
	return time.Duration(v.ns).String()
}
func (v *stepValue) Type() string { return "duration|Np" }

// choiceValue is one word out of a fixed list. aliases maps other accepted
// spellings (tc's keywords) to a canonical choice.
type choiceValue struct {
	val     string
	choices []string
	aliases map[string]string
}

func (v *choiceValue) Set(s string) error {
	if a, ok := v.aliases[s]; ok {
		s = a
	}
	for _, c := range v.choices {
		if s == c {
			v.val = s
			return nil
		}
	}
	return fmt.Errorf("want one of %s", strings.Join(v.choices, ", "))
}

func (v *choiceValue) String() string { return v.val }
func (v *choiceValue) Type() string   { return strings.Join(v.choices, "|") }

// lossValue is a loss model as shaper.ParseLoss reads it ("1%", "0.01",
// "ge:p=1%,r=30%"). It keeps the text: Gilbert–Elliott has state, so each
// direction parses its own instance.
type lossValue struct{ text string }

func (v *lossValue) Set(s string) error {
	if _, err := shaper.ParseLoss(s); err != nil {
		return err
	}
	v.text = s
	return nil
}

func (v *lossValue) String() string { return v.text }
func (v *lossValue) Type() string   { return "loss" }
