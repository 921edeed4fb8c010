package shaper

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
)

// MaxRateTraceBytes bounds a rate trace file. Mahimahi's own cellular
// traces are a few MB; a longer or faster one fits many times over, and
// the parsed trace (8 bytes an opportunity, 2 to 8 bytes a line) stays
// within a few times the file.
const MaxRateTraceBytes = 32 << 20

// LoadRateTrace reads a rate schedule file in either format, told apart by
// content: if the first significant line (not blank, not '#') holds a comma
// it is a `time,rate` CSV (ParseRateCSV), otherwise a mahimahi trace
// (ParseMahimahi). It reads the file as it parses, never more than
// MaxRateTraceBytes of it, and a line of at most MaxLineBytes; a device
// or pipe that never ends (/dev/zero) is refused at a limit. Errors name
// the file, the line and the limit.
func LoadRateTrace(path string) (Rate, error) {
	r, err := loadRateTrace(path)
	if err != nil {
		return nil, &FileError{err}
	}
	return r, nil
}

// FileError is a rate trace file that could not be read or is not a
// trace: the file's fault, where a bad flag value is the command line's.
type FileError struct{ Err error }

func (e *FileError) Error() string { return e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

func loadRateTrace(path string) (Rate, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("rate trace: %w", err)
	}
	defer f.Close()
	lr := &io.LimitedReader{R: f, N: MaxRateTraceBytes + 1}
	br := bufio.NewReaderSize(lr, MaxLineBytes)
	// The first significant line decides the format: looked for in the
	// first MaxLineBytes.
	head, _ := br.Peek(MaxLineBytes)
	parse := ParseMahimahi
	if isCSV(head) {
		parse = ParseRateCSV
	}
	r, err := parse(br)
	if lr.N <= 0 {
		return nil, fmt.Errorf("rate trace %s: larger than %d MiB, the limit for a rate trace", path, MaxRateTraceBytes>>20)
	}
	if err != nil {
		return nil, fmt.Errorf("rate trace %s: %w", path, err)
	}
	return r, nil
}

// ParseRateTrace reads a rate schedule held in memory (a trace shipped in
// the binary), in either of LoadRateTrace's formats.
func ParseRateTrace(data []byte) (Rate, error) {
	parse := ParseMahimahi
	if isCSV(data) {
		parse = ParseRateCSV
	}
	return parse(bytes.NewReader(data))
}

// isCSV reports whether the first significant line of data has a comma.
func isCSV(data []byte) bool {
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		return bytes.IndexByte(line, ',') >= 0
	}
	return false
}
