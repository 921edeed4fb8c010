// Package jsondoc reads the JSON schema that docs/json.md documents in
// tables, and checks a JSON output against it, so the documentation of
// every JSON output stays complete and true: a field the output has and
// the page does not, a documented field the output lacks, or a value of
// another type is an error that says which table to fix.
//
// The page's format: a heading whose text is "object NAME" (any level)
// opens the table of object NAME; the first table after it has the
// columns field, type, unit, meaning. The field is in backquotes, followed
// by "(optional)" when an output may leave it out. Types:
//
//	string, integer, number, boolean   a JSON value of that kind
//	T or U (or null)                   any of them ("map of T or U" and
//	                                   "array of T or U" hold Ts or Us)
//	object NAME                        an object documented by NAME's table
//	array of T                         an array of T (elements checked)
//	map of T                           an object of any keys, values T
//	any                                any value, documented elsewhere
//	                                   (the meaning says where)
package jsondoc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Field is one row of an object's table.
type Field struct {
	Name     string
	Type     string
	Optional bool
}

// Schema is every object the page documents, by name.
type Schema struct {
	File    string // the page's name, for messages
	Objects map[string][]Field
}

var (
	headingRE = regexp.MustCompile("^#+\\s+object\\s+`?([A-Za-z0-9_.\\-]+)`?\\s*$")
	fieldRE   = regexp.MustCompile("^`([^`]+)`\\s*(\\(optional\\))?$")
)

// Parse reads the objects of a page; file names it in messages.
func Parse(page []byte, file string) (*Schema, error) {
	s := &Schema{File: file, Objects: map[string][]Field{}}
	sc := bufio.NewScanner(bytes.NewReader(page))
	var cur string // the object whose table comes next
	inTable := false
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if m := headingRE.FindStringSubmatch(t); m != nil {
			if _, dup := s.Objects[m[1]]; dup {
				return nil, fmt.Errorf("%s:%d: object %s documented twice", file, line, m[1])
			}
			cur, inTable = m[1], false
			s.Objects[cur] = nil
			continue
		}
		if cur == "" {
			continue
		}
		if !strings.HasPrefix(t, "|") {
			if inTable { // the table ended
				cur, inTable = "", false
			}
			continue
		}
		cells := strings.Split(strings.Trim(t, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if !inTable { // the header row
			if len(cells) < 4 || cells[0] != "field" || cells[1] != "type" {
				return nil, fmt.Errorf("%s:%d: object %s: want a table with the columns field | type | unit | meaning", file, line, cur)
			}
			inTable = true
			continue
		}
		if strings.Trim(cells[0], "-: ") == "" { // the separator row
			continue
		}
		m := fieldRE.FindStringSubmatch(cells[0])
		if m == nil {
			return nil, fmt.Errorf("%s:%d: object %s: field %q: want `name`, optionally followed by (optional)", file, line, cur, cells[0])
		}
		if err := checkType(cells[1]); err != nil {
			return nil, fmt.Errorf("%s:%d: object %s: field %s: %v", file, line, cur, m[1], err)
		}
		if len(cells) < 4 || cells[3] == "" {
			return nil, fmt.Errorf("%s:%d: object %s: field %s has no meaning", file, line, cur, m[1])
		}
		s.Objects[cur] = append(s.Objects[cur], Field{Name: m[1], Type: cells[1], Optional: m[2] != ""})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for name, fs := range s.Objects {
		for _, f := range fs {
			for _, ref := range refs(f.Type) {
				if _, ok := s.Objects[ref]; !ok {
					return nil, fmt.Errorf("%s: object %s: field %s refers to object %s, which has no table", file, name, f.Name, ref)
				}
			}
		}
	}
	return s, nil
}

// checkType accepts the type grammar of the package comment.
func checkType(t string) error {
	t = strings.TrimSpace(t)
	switch {
	case strings.HasPrefix(t, "array of "):
		return checkType(t[9:])
	case strings.HasPrefix(t, "map of "):
		return checkType(t[7:])
	}
	if alts := strings.Split(t, " or "); len(alts) > 1 {
		for _, a := range alts {
			if a = strings.TrimSpace(a); a != "null" {
				if err := checkType(a); err != nil {
					return err
				}
			}
		}
		return nil
	}
	switch {
	case t == "string" || t == "integer" || t == "number" || t == "boolean" || t == "any":
		return nil
	case strings.HasPrefix(t, "object ") && strings.TrimSpace(t[7:]) != "":
		return nil
	}
	return fmt.Errorf("type %q: want string, integer, number, boolean, object NAME, array of T, map of T, or T or null", t)
}

// refs returns the object names a type refers to.
func refs(t string) []string {
	t = strings.TrimSpace(t)
	switch {
	case strings.HasPrefix(t, "array of "):
		return refs(t[9:])
	case strings.HasPrefix(t, "map of "):
		return refs(t[7:])
	}
	if alts := strings.Split(t, " or "); len(alts) > 1 {
		var r []string
		for _, a := range alts {
			r = append(r, refs(a)...)
		}
		return r
	}
	switch {
	case strings.HasPrefix(t, "object "):
		return []string{strings.TrimSpace(t[7:])}
	}
	return nil
}

// Check validates one JSON document (data) against object root. output
// names the output in messages ("stats --json"). It returns every
// mismatch, sorted, each saying what to change and where.
func (s *Schema) Check(output, root string, data []byte) []string {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return []string{fmt.Sprintf("%s: not JSON: %v", output, err)}
	}
	if _, ok := s.Objects[root]; !ok {
		return []string{fmt.Sprintf("%s: %s has no table for object %s: add a heading \"### object %s\" and its table", output, s.File, root, root)}
	}
	c := &checker{s: s, output: output}
	c.value(v, "object "+root, "")
	sort.Strings(c.errs)
	return slices.Compact(c.errs)
}

type checker struct {
	s      *Schema
	output string
	errs   []string
}

func (c *checker) fail(format string, a ...any) {
	c.errs = append(c.errs, c.output+": "+fmt.Sprintf(format, a...))
}

// value checks v, found at path, against type t.
func (c *checker) value(v any, t, path string) {
	t = strings.TrimSpace(t)
	if alts := strings.Split(t, " or "); len(alts) > 1 && !strings.HasPrefix(t, "array of ") && !strings.HasPrefix(t, "map of ") {
		// Valid if one alternative takes it; else the errors of each.
		var all []string
		for _, a := range alts {
			a = strings.TrimSpace(a)
			if a == "null" {
				if v == nil {
					return
				}
				continue
			}
			sub := &checker{s: c.s, output: c.output}
			sub.value(v, a, path)
			if len(sub.errs) == 0 {
				return
			}
			all = append(all, sub.errs...)
		}
		if v == nil {
			c.fail("%s is null, but %s says %s", path, c.s.File, t)
			return
		}
		c.errs = append(c.errs, all...)
		return
	}
	show := path
	if show == "" {
		show = "the document"
	}
	wrong := func(want string) {
		c.fail("%s is %s, but %s says %s", show, kind(v), c.s.File, want)
	}
	switch {
	case t == "any":
	case t == "string":
		if _, ok := v.(string); !ok {
			wrong("string")
		}
	case t == "boolean":
		if _, ok := v.(bool); !ok {
			wrong("boolean")
		}
	case t == "number":
		if _, ok := v.(json.Number); !ok {
			wrong("number")
		}
	case t == "integer":
		n, ok := v.(json.Number)
		if f, err := n.Float64(); !ok || err != nil || f != math.Trunc(f) || strings.ContainsAny(string(n), ".eE") {
			wrong("integer")
		}
	case strings.HasPrefix(t, "array of "):
		a, ok := v.([]any)
		if !ok {
			wrong(t)
			return
		}
		for _, e := range a {
			c.value(e, t[9:], path+"[]")
		}
	case strings.HasPrefix(t, "map of "):
		m, ok := v.(map[string]any)
		if !ok {
			wrong(t)
			return
		}
		for k, e := range m {
			c.value(e, t[7:], path+"."+k)
		}
	case strings.HasPrefix(t, "object "):
		m, ok := v.(map[string]any)
		if !ok {
			wrong(t)
			return
		}
		c.object(m, strings.TrimSpace(t[7:]), path)
	}
}

func (c *checker) object(m map[string]any, name, path string) {
	fields := c.s.Objects[name]
	for _, f := range fields {
		v, ok := m[f.Name]
		if !ok {
			if !f.Optional {
				c.fail("%s.%s is documented (object %s in %s) but missing from the output: remove its row, or mark it (optional) if the output may leave it out", path, f.Name, name, c.s.File)
			}
			continue
		}
		c.value(v, f.Type, path+"."+f.Name)
	}
	for k, v := range m {
		if !slices.ContainsFunc(fields, func(f Field) bool { return f.Name == k }) {
			c.fail("%s.%s (%s) is not documented: add a row | `%s` | %s | unit | meaning | to the table under \"object %s\" in %s", path, k, kind(v), k, typeOf(v), name, c.s.File)
		}
	}
}

// kind names a decoded JSON value's kind for messages.
func kind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			return "a number"
		}
		return "an integer"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// typeOf suggests the page's type for a value.
func typeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "T or null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			return "number"
		}
		return "integer"
	case []any:
		return "array of T"
	}
	return "object NAME"
}
