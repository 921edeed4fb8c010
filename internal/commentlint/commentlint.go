// Package commentlint finds code comments that record history instead of
// stating what stays true: a date, an issue number, a session or round of
// work, or a citation of a document the repository does not hold. Figures
// and their dates belong in docs/performance.md, design notes in
// docs/design.md; a comment keeps the invariant and its reason.
package commentlint

import (
	"regexp"
	"strings"
)

// Hit is one match in a comment's text.
type Hit struct {
	Rule   string // "date", "issue", "history", "cite"
	Text   string // the matched words
	Offset int    // byte offset in the text given to Match
}

var months = `(?:January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)`

var (
	// An ISO date or year-month: the year range (2000-2039) keeps sizes
	// such as a 2048-byte buffer out.
	isoDate = regexp.MustCompile(`\b20[0-3][0-9]-(?:0[1-9]|1[0-2])(?:-(?:0[1-9]|[12][0-9]|3[01]))?\b`)
	// A year left open: the year, a hyphen and no more digits.
	openYear = regexp.MustCompile(`\b20[0-3][0-9]-(?:$|[\s.,;:)…])`)
	// A month name or its abbreviation, an optional day, then the year.
	// Month names are matched with their capital so that "may" stays a
	// verb.
	monthYear = regexp.MustCompile(`\b` + months + `\.?(?:\s+[0-9]{1,2}(?:st|nd|rd|th)?,?)?\s+(?:19|20)[0-9]{2}\b`)

	// An issue, ticket or pull request by number. A bare "#2" stays: it
	// may as well number a packet.
	issueNum = regexp.MustCompile(`(?i)\b(?:issues?|tickets?|pull requests?|PRs?)\s*#?\s*[0-9]+`)

	// A numbered step of some past plan of work (a stop, a round, a
	// pass). The number must not be a quantity: frames that stop two
	// seconds before the end are not history.
	stepNum = regexp.MustCompile(`(?i)\b(?:stop|round|rounds|pass|iteration)\s+([0-9]+)(?:\s*([A-Za-zµ%]+))?`)
	// Work sessions as history, while the video "session" and the
	// WWDC "session 10004" stay.
	sessionAgo = regexp.MustCompile(`(?i)\bsessions?\s+ago\b|\b(?:this|previous|earlier|prior|last|next|later|an earlier|an other|another)\s+(?:work\s+)?sessions?\b`)
)

// quantities follow a number that counts or measures something; after
// "stop N" or "round N" they make it a figure, not a step number.
var quantities = map[string]bool{
	"ns": true, "us": true, "µs": true, "ms": true, "s": true, "sec": true, "secs": true,
	"second": true, "seconds": true, "min": true, "minute": true, "minutes": true,
	"h": true, "hour": true, "hours": true, "packet": true, "packets": true,
	"frame": true, "frames": true, "byte": true, "bytes": true, "kb": true,
	"mb": true, "%": true, "rtt": true, "rtts": true, "times": true, "x": true,
}

// sectionSource is a document a section sign may follow: an RFC, an
// Internet-Draft, a Markdown file or an annex, with no other section sign
// between; or, in a list of sections of one source, the section just
// before it.
var sectionSource = regexp.MustCompile(`(?:(?:RFC\s*[0-9]+|draft-[A-Za-z0-9-]+|\.md|Annex(?:es)?\s+[A-Z][-A-Z]*)[^§]*|§\s*[0-9A-Za-z.]+\s*(?:,|/|and|or|to|-|–)?\s*)$`)

// numberedItem cites an item by its number in a list the repository does
// not hold (a reference's numbered behaviours).
var numberedItem = regexp.MustCompile(`\b[Bb]ehaviou?rs?\s+[0-9]+\b`)

// sectionLookback is how far before a section sign its source may be
// named: the same clause, across a comment's line break.
const sectionLookback = 48

// Match returns the history a comment's text records, and the citations
// that name no source, in text order per rule.
func Match(text string) []Hit {
	var hits []Hit
	add := func(rule string, re *regexp.Regexp) {
		for _, m := range re.FindAllStringIndex(text, -1) {
			hits = append(hits, Hit{Rule: rule, Text: strings.TrimSpace(text[m[0]:m[1]]), Offset: m[0]})
		}
	}
	add("date", isoDate)
	add("date", openYear)
	add("date", monthYear)
	add("issue", issueNum)
	for _, m := range stepNum.FindAllStringSubmatchIndex(text, -1) {
		if m[4] >= 0 && quantities[strings.ToLower(text[m[4]:m[5]])] {
			continue
		}
		end := m[3] // the number; the word after it is not part of the hit
		hits = append(hits, Hit{Rule: "history", Text: text[m[0]:end], Offset: m[0]})
	}
	add("history", sessionAgo)
	add("cite", numberedItem)
	for i := strings.Index(text, "§"); i >= 0; {
		if !sectionSource.MatchString(text[max(0, i-sectionLookback):i]) {
			end := min(len(text), i+len("§")+8)
			hits = append(hits, Hit{Rule: "cite", Text: strings.ToValidUTF8(strings.TrimSpace(text[i:end]), ""), Offset: i})
		}
		next := strings.Index(text[i+len("§"):], "§")
		if next < 0 {
			break
		}
		i += len("§") + next
	}
	return hits
}

// docRef is a document a comment names: a Markdown file with or without
// folders, a repository path to a Go file, or a path in someone's working
// folders (/work, /home, /root), which no user of the repository has.
// Kernel and upstream sources (sch_dualpi2.c, prague_cc.cpp) are named by
// their own project's path, and system paths (/proc, /dev, /tmp) by the
// system's; neither is checked here.
var docRef = regexp.MustCompile(`(?:[A-Za-z0-9_.~-]+/)*[A-Za-z0-9_~-][A-Za-z0-9_.~-]*\.md\b|(?:[A-Za-z0-9_.~-]+/)+[A-Za-z0-9_~-][A-Za-z0-9_.~-]*\.go\b|(?:^|[\s(])/(?:work|home|root)/[^\s)]*`)

// Citations returns the document paths a comment's text names.
func Citations(text string) []string {
	var out []string
	for _, m := range docRef.FindAllString(text, -1) {
		m = strings.TrimLeft(m, " \t\n(")
		out = append(out, strings.TrimRight(m, ".,;:"))
	}
	return out
}
