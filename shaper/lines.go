package shaper

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxLineBytes bounds a line of a rate trace: a line holds one number or
// one time,rate pair, and a longer one is not a trace.
const MaxLineBytes = 64 << 10

// scanLines calls f with each significant line of r and its 1-based line
// number: surrounding white space (and a CR) trimmed, blank lines and lines
// starting with '#' skipped. It stops at the first error.
func scanLines(r io.Reader, f func(line int, text string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxLineBytes)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		if err := f(line, text); err != nil {
			return err
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("line %d: longer than %d bytes, the limit for a line", line+1, MaxLineBytes)
	} else if err != nil {
		return fmt.Errorf("line %d: %w", line+1, err)
	}
	return nil
}
