package clidoc

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// Annotations a program sets on its flags (pflag.Flag.Annotations) to
// shape their help.
const (
	// GroupAnnotation names the heading a flag is listed under ("link",
	// "queue", ...); flags without one come first, under "Flags".
	GroupAnnotation = "clidoc-group"
	// ArgAnnotation is the name of the flag's value, in place of the
	// usage's `word` or the value's type.
	ArgAnnotation = "clidoc-arg"
	// NoDefaultAnnotation: help shows no default for the flag (a value
	// that changes a running thing has none).
	NoDefaultAnnotation = "clidoc-no-default"
)

// Annotate sets annotation key to value on fs's flag name.
func Annotate(fs *pflag.FlagSet, name, key, value string) {
	if err := fs.SetAnnotation(name, key, []string{value}); err != nil {
		panic("clidoc: " + err.Error())
	}
}

// GoTypeNames are the words pflag prints for a value's Go type when the
// usage names none; help must show a placeholder instead.
var GoTypeNames = []string{
	"bool", "bools", "boolSlice", "int", "ints", "intSlice", "int8", "int16", "int32", "int64",
	"uint", "uints", "uintSlice", "uint8", "uint16", "uint32", "uint64",
	"float", "float32", "float64", "float32Slice", "float64Slice",
	"string", "strings", "stringSlice", "stringArray", "stringToString", "stringToInt",
	"duration", "durationSlice", "ip", "ipSlice", "ipMask", "ipNet", "bytesHex", "bytesBase64", "count",
}

// placeholders turns a value's type as a pflag.Value names it into the
// word help shows: what a user types, in capitals.
var placeholders = map[string]string{
	"duration": "TIME", "durationSlice": "TIME,...",
	"int": "N", "uint": "N", "int64": "N", "uint64": "N", "int32": "N", "uint32": "N", "ints": "N,...", "uints": "N,...",
	"float": "NUMBER", "float64": "NUMBER", "float32": "NUMBER",
	"string": "TEXT", "strings": "TEXT,...", "stringSlice": "TEXT,...", "stringArray": "TEXT",
	"duration|off": "TIME|off", "duration|Np": "TIME|Np", "interval,size": "INTERVAL,SIZE", "jitter": "AMOUNT[,DIST]",
}

// Placeholder is the name help gives f's value: its ArgAnnotation, the
// usage's `word` in capitals, or a word for its type; one of a fixed
// list of words (a value with a Words method) shows the words. A switch
// has none.
func Placeholder(f *pflag.Flag) string {
	if f.NoOptDefVal != "" {
		return ""
	}
	if a := f.Annotations[ArgAnnotation]; len(a) > 0 {
		return a[0]
	}
	name, _ := pflag.UnquoteUsage(f)
	if w, ok := f.Value.(interface{ Words() []string }); ok && w.Words() != nil && name == f.Value.Type() {
		return name
	}
	if p, ok := placeholders[name]; ok {
		return p
	}
	return strings.ToUpper(name)
}

// usageText is f's usage without the quoting of its value's name.
func usageText(f *pflag.Flag) string {
	_, u := pflag.UnquoteUsage(f)
	return u
}

// shownDefault is f's default as help prints it, "" for none: a zero
// value, a switch that is off, or a flag marked NoDefaultAnnotation.
func shownDefault(f *pflag.Flag) string {
	if _, no := f.Annotations[NoDefaultAnnotation]; no {
		return ""
	}
	switch f.DefValue {
	case "", "0", "0s", "false", "[]", "<nil>":
		return ""
	}
	return f.DefValue
}

// Group is a heading of a command's flags and the flags under it.
type Group struct {
	Name  string // the GroupAnnotation; "" for the command's own flags
	Flags []*pflag.Flag
}

// Groups lists fs's flags that help shows (hidden and deprecated ones
// left out), the ungrouped first, then each group in order; a group not
// in order comes last, in the order its flags were declared.
func Groups(fs *pflag.FlagSet, order []string) []Group {
	byName := map[string]*Group{"": {}}
	names := []string{""}
	for _, o := range order {
		byName[o] = &Group{Name: o}
		names = append(names, o)
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" {
			return
		}
		g := ""
		if a := f.Annotations[GroupAnnotation]; len(a) > 0 {
			g = a[0]
		}
		if byName[g] == nil {
			byName[g] = &Group{Name: g}
			names = append(names, g)
		}
		byName[g].Flags = append(byName[g].Flags, f)
	})
	var out []Group
	for _, n := range names {
		if len(byName[n].Flags) > 0 {
			out = append(out, *byName[n])
		}
	}
	return out
}

// FlagLine is one flag as help lists it: "--rate RATE" or "-v, --verbose".
func FlagLine(f *pflag.Flag) string {
	s := "    --" + f.Name
	if f.Shorthand != "" {
		s = "-" + f.Shorthand + ", --" + f.Name
	}
	if p := Placeholder(f); p != "" {
		s += " " + p
	}
	return s
}

// Usages renders fs's flags under headings: title(group) names each
// group's heading. A flag's usage follows its name on the same line
// when the name is short, else on the next, and ends with its default.
func Usages(fs *pflag.FlagSet, order []string, title func(group string) string) string {
	const col = 30 // usage column: names longer than this get a line of their own
	var b strings.Builder
	for i, g := range Groups(fs, order) {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s:\n", title(g.Name))
		for _, f := range g.Flags {
			line := "  " + FlagLine(f)
			u := usageText(f)
			if d := shownDefault(f); d != "" {
				u += " (default " + d + ")"
			}
			if len(line) < col-1 {
				fmt.Fprintf(&b, "%-*s %s\n", col, line, u)
			} else {
				fmt.Fprintf(&b, "%s\n%*s %s\n", line, col, "", u)
			}
		}
	}
	return b.String()
}
