// Package jsonline builds JSON lines by hand into a reused buffer, for
// output too large for encoding/json's reflection: replay prints one line
// per packet. Keys come out in call order and floats with a fixed number
// of decimals, so the same calls give the same bytes.
package jsonline

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// Line builds one JSON object, reusing its buffer from line to line; the
// zero value is ready. Keys are constants without characters to escape.
type Line struct {
	b     []byte
	first bool // no key written yet in the innermost object
}

// Begin starts a top-level object {"type":typ.
func (j *Line) Begin(typ string) {
	j.b = append(j.b[:0], '{')
	j.first = true
	j.Str("type", typ)
}

// End closes the top-level object and terminates the line; the bytes are
// valid until the next Begin.
func (j *Line) End() []byte {
	j.b = append(j.b, '}', '\n')
	return j.b
}

func (j *Line) key(k string) {
	if !j.first {
		j.b = append(j.b, ',')
	}
	j.first = false
	j.b = append(j.b, '"')
	j.b = append(j.b, k...) // keys are constants without escapes
	j.b = append(j.b, '"', ':')
}

// Object opens a nested object under k; close it with CloseObject.
func (j *Line) Object(k string) {
	j.key(k)
	j.b = append(j.b, '{')
	j.first = true
}

// CloseObject closes the innermost nested object.
func (j *Line) CloseObject() {
	j.b = append(j.b, '}')
	j.first = false
}

// Int writes a signed integer.
func (j *Line) Int(k string, v int64) {
	j.key(k)
	j.b = strconv.AppendInt(j.b, v, 10)
}

// Uint writes an unsigned integer.
func (j *Line) Uint(k string, v uint64) {
	j.key(k)
	j.b = strconv.AppendUint(j.b, v, 10)
}

// Bool writes true or false.
func (j *Line) Bool(k string, v bool) {
	j.key(k)
	j.b = strconv.AppendBool(j.b, v)
}

// Null writes null.
func (j *Line) Null(k string) {
	j.key(k)
	j.b = append(j.b, "null"...)
}

// Float writes v with prec decimals; JSON has no NaN or infinity, so those
// become null.
func (j *Line) Float(k string, v float64, prec int) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		j.Null(k)
		return
	}
	j.key(k)
	j.b = strconv.AppendFloat(j.b, v, 'f', prec, 64)
}

// A Field is one field of an object whose keys its writer does not
// know: the knobs of a queue, which the table of settings renders for
// replay's and stats' config objects. JSON is the value encoded, Words
// the same value as a person reads it (a table).
type Field struct {
	Key, JSON, Words string
}

// Raw writes v, a JSON value its caller encoded, as it is.
func (j *Line) Raw(k, v string) {
	j.key(k)
	j.b = append(j.b, v...)
}

// Str writes s as a JSON string (RFC 8259 §7): quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD.
func (j *Line) Str(k, s string) {
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
