package main

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// jsonLine builds one JSON object by hand into a reused buffer: replay
// prints one line per packet, and encoding/json's reflection would cost
// more than the simulation itself. Keys are written in call order, floats
// with a fixed number of decimals, so output is byte-for-byte repeatable.
type jsonLine struct {
	b     []byte
	first bool // no key written yet in the innermost object
}

// begin starts a top-level object {"type":typ.
func (j *jsonLine) begin(typ string) {
	j.b = append(j.b[:0], '{')
	j.first = true
	j.str("type", typ)
}

// end closes the top-level object and terminates the line.
func (j *jsonLine) end() []byte {
	j.b = append(j.b, '}', '\n')
	return j.b
}

func (j *jsonLine) key(k string) {
	if !j.first {
		j.b = append(j.b, ',')
	}
	j.first = false
	j.b = append(j.b, '"')
	j.b = append(j.b, k...) // keys are constants without escapes
	j.b = append(j.b, '"', ':')
}

// object opens a nested object under k; close it with closeObject.
func (j *jsonLine) object(k string) {
	j.key(k)
	j.b = append(j.b, '{')
	j.first = true
}

func (j *jsonLine) closeObject() {
	j.b = append(j.b, '}')
	j.first = false
}

func (j *jsonLine) int(k string, v int64) {
	j.key(k)
	j.b = strconv.AppendInt(j.b, v, 10)
}

func (j *jsonLine) uint(k string, v uint64) {
	j.key(k)
	j.b = strconv.AppendUint(j.b, v, 10)
}

func (j *jsonLine) bool(k string, v bool) {
	j.key(k)
	j.b = strconv.AppendBool(j.b, v)
}

func (j *jsonLine) null(k string) {
	j.key(k)
	j.b = append(j.b, "null"...)
}

// float writes v with prec decimals; JSON has no NaN or infinity, so those
// become null.
func (j *jsonLine) float(k string, v float64, prec int) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		j.null(k)
		return
	}
	j.key(k)
	j.b = strconv.AppendFloat(j.b, v, 'f', prec, 64)
}

// str writes s as a JSON string (RFC 8259 §7): quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD.
func (j *jsonLine) str(k, s string) {
	j.key(k)
	j.b = appendJSONString(j.b, s)
}

func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
			i++
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			i++
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			b = utf8.AppendRune(b, r) // RuneError for invalid bytes
			i += n
		}
	}
	return append(b, '"')
}
