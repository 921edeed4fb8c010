package shaper

import (
	"bytes"
	"fmt"
	"os"
)

// LoadRateTrace reads a rate schedule file in either format, told apart by
// content: if the first significant line (not blank, not '#') holds a comma
// it is a `time,rate` CSV (ParseRateCSV), otherwise a mahimahi trace
// (ParseMahimahi). Errors name the file and the line.
func LoadRateTrace(path string) (Rate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("rate trace: %w", err)
	}
	r, err := ParseRateTrace(data)
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
