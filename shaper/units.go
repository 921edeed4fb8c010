package shaper

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// rateUnits are tc(8)'s rate units in bits per second. As in tc, "bps" is
// BYTES per second and a bare number is bits per second; SI prefixes are
// powers of 1000, the binary ones (kibit, kibps, ...) powers of 1024.
var rateUnits = map[string]float64{
	"":      1,
	"bit":   1,
	"kbit":  1e3,
	"mbit":  1e6,
	"gbit":  1e9,
	"tbit":  1e12,
	"kibit": 1 << 10,
	"mibit": 1 << 20,
	"gibit": 1 << 30,
	"tibit": 1 << 40,
	"bps":   8,
	"kbps":  8e3,
	"mbps":  8e6,
	"gbps":  8e9,
	"tbps":  8e12,
	"kibps": 8 << 10,
	"mibps": 8 << 20,
	"gibps": 8 << 30,
	"tibps": 8 << 40,
}

const rateUnitList = "bit, kbit, mbit, gbit, tbit, bps, kbps, mbps, gbps, tbps (bps = bytes/s), or binary kibit, mibit, gibit, tibit, kibps, ..."

// sizeUnits are tc(8)'s size units in bytes: all binary, and the "bit"
// forms count bits (kbit = 1024 bits = 128 bytes).
var sizeUnits = map[string]float64{
	"":     1,
	"b":    1,
	"k":    1 << 10,
	"kb":   1 << 10,
	"m":    1 << 20,
	"mb":   1 << 20,
	"g":    1 << 30,
	"gb":   1 << 30,
	"kbit": 1 << 10 / 8,
	"mbit": 1 << 20 / 8,
	"gbit": 1 << 30 / 8,
}

const sizeUnitList = "b, k or kb (1024), m or mb, g or gb, kbit (128 bytes), mbit, gbit"

// ParseRate parses a rate in tc(8) units ("10mbit", "1.5gbit", "500kbps",
// "1000000") into bits per second, rounded to the nearest integer.
// Units are case-insensitive, as in tc. The error quotes s so a caller can
// prefix the flag name: `--rate "10mb": unknown unit "mb" (want ...)`.
func ParseRate(s string) (uint64, error) {
	return parseWithUnit(s, rateUnits, rateUnitList)
}

// ParseSize parses a size in tc(8) units ("64k", "1mb", "1500", "32kbit")
// into bytes, rounded to the nearest integer.
func ParseSize(s string) (uint64, error) {
	return parseWithUnit(s, sizeUnits, sizeUnitList)
}

// parseWithUnit splits s into a non-negative decimal number and a unit
// from units, and returns number·unit rounded to the nearest integer.
func parseWithUnit(s string, units map[string]float64, want string) (uint64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(t[i:])
	if num == "" {
		if t == "" {
			return 0, fmt.Errorf("%q: empty (want a number with a unit: %s)", s, want)
		}
		return 0, fmt.Errorf("%q: want a non-negative number followed by a unit (%s)", s, want)
	}
	mult, ok := units[unit]
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q (want %s)", s, t[i:], want)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: bad number %q", s, num)
	}
	v := math.Round(f * mult)
	// 2^64 is exactly representable; anything at or above it overflows.
	if v >= 1<<64 {
		return 0, fmt.Errorf("%q: too large", s)
	}
	return uint64(v), nil
}

// FormatRate prints bits per second in the largest tc unit that keeps the
// value exact to three decimals ("10mbit", "1.5gbit", "999bit").
func FormatRate(bps uint64) string {
	for _, u := range [...]struct {
		name string
		div  uint64
	}{{"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}} {
		if bps >= u.div && bps%(u.div/1000) == 0 {
			return strconv.FormatFloat(float64(bps)/float64(u.div), 'f', -1, 64) + u.name
		}
	}
	return strconv.FormatUint(bps, 10) + "bit"
}

// packetSuffixes are the ways tc-dualpi2 spells "packets" after a count,
// longest first so "3pkts" is not read as "3pkt" + "s".
var packetSuffixes = []string{"packets", "packet", "pkts", "pkt", "p"}

// ParsePackets reads a packet count as tc-dualpi2 writes one: decimal,
// at most 2^32-1, optionally followed by p, pkt, pkts, packet or packets.
// suffixed says whether it was (step_thresh needs one to mean packets).
func ParsePackets(s string) (n uint32, suffixed bool, err error) {
	num := s
	for _, suf := range packetSuffixes {
		if strings.HasSuffix(s, suf) {
			num, suffixed = strings.TrimSuffix(s, suf), true
			break
		}
	}
	v, err := strconv.ParseUint(num, 10, 32)
	if err != nil {
		return 0, suffixed, fmt.Errorf("%q: want a packet count like 100 or 100p", s)
	}
	return uint32(v), suffixed, nil
}
