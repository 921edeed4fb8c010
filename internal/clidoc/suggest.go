package clidoc

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pi2hop/pi2hop/internal/flagvalue"
	"github.com/spf13/pflag"
)

// Suggest returns the candidate a mistyped word most likely meant: the
// one nearest by edit distance (a swap of neighbours counts as one edit),
// if it is near enough to be a typo (one edit in a word of up to four
// letters, two beyond), else the only candidate word is a prefix of. A
// tie goes to the candidate sharing the longer start with word (typos
// are rarer in a word's first letters: --rat is --rate, not --nat), then
// to the first in candidates' order.
func Suggest(word string, candidates []string) (string, bool) {
	best, bestD, bestP := "", -1, 0
	for _, c := range candidates {
		d, p := editDistance(word, c), commonPrefix(word, c)
		if bestD < 0 || d < bestD || d == bestD && p > bestP {
			best, bestD, bestP = c, d, p
		}
	}
	limit := 1
	if len(word) > 4 {
		limit = 2
	}
	if bestD >= 0 && bestD <= limit {
		return best, true
	}
	var prefixOf []string
	for _, c := range candidates {
		if len(word) >= 2 && strings.HasPrefix(c, word) {
			prefixOf = append(prefixOf, c)
		}
	}
	if len(prefixOf) == 1 {
		return prefixOf[0], true
	}
	return "", false
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of neighbours.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// DidYouMean is ` (did you mean X?)` for the candidate word most likely
// meant, with how it is written (prefix "--" for a flag), or "".
func DidYouMean(word, prefix string, candidates []string) string {
	if s, ok := Suggest(word, candidates); ok {
		return fmt.Sprintf("; did you mean %s%s?", prefix, s)
	}
	return ""
}

// tcFlag reports whether f is one of the link's or queue's settings,
// whose values read as tc's (its help groups them so).
func tcFlag(f *pflag.Flag) bool {
	if f == nil {
		return false
	}
	g := f.Annotations[GroupAnnotation]
	return len(g) > 0 && (g[0] == "link" || g[0] == "queue")
}

// FlagError rewords pflag's parse error of fs: an unknown flag gets the
// flag it most likely meant; a bad value reads --flag "value": why (a
// cause that already quotes the value is not quoted twice).
func FlagError(fs *pflag.FlagSet, err error) error {
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) {
		cause := errors.Unwrap(bad)
		if errors.Is(cause, flagvalue.ErrBareTime) && !tcFlag(fs.Lookup(bad.GetFlag().Name)) {
			cause = errors.New(flagvalue.BareTimeHint) // tc has no say in a time of pi2hop's own
		}
		if strings.HasPrefix(cause.Error(), strconv.Quote(bad.GetValue())+":") {
			return fmt.Errorf("--%s %w", bad.GetFlag().Name, cause)
		}
		return fmt.Errorf("--%s %q: %w", bad.GetFlag().Name, bad.GetValue(), cause)
	}
	// pflag's unknown-flag error has no type of its own, only this wording.
	name, unknown := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !unknown {
		return err
	}
	name, _, _ = strings.Cut(name, "=")
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Deprecated == "" {
			names = append(names, f.Name)
		}
	})
	if hint := DidYouMean(name, "--", names); hint != "" {
		return fmt.Errorf("%w%s", err, hint)
	}
	return err
}
