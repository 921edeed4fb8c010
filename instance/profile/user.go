package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// UserDir is where a user keeps profiles of their own, below their home:
// one file each, NAME.toml or NAME.json.
const UserDir = ".config/pi2hop/profiles"

// MaxUserFile is the largest profile file read: a profile is a dozen
// lines, and a bigger file is a mistake, not a profile.
const MaxUserFile = 64 << 10

// userName is what a user profile may be called: what --profile takes
// and a file name holds without quoting.
var userName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// Reserved keys of a user profile file; every other key is a setting.
const (
	keyTitle   = "title"
	keySources = "sources"
)

// ParseUser reads a user profile from data, the contents of file (whose
// extension, .toml or .json, says the format). The file is flat: an
// optional title (a string) and sources (a list of strings), and one key
// per setting, named as its flag without the dashes, with the flag's
// value: a string as the flag takes it ("20mbit"), or a number or a
// boolean. Lines keeps the line of each setting, so that a bad one can be
// named by file and line.
func ParseUser(file string, data []byte) (Profile, error) {
	name, ext := nameOf(file)
	p := Profile{Name: name, File: file}
	if !userName.MatchString(name) {
		return p, fmt.Errorf("%s: profile name %q: want letters, digits, - and _, starting with a letter or digit", file, name)
	}
	var err error
	switch ext {
	case ".toml":
		err = parseTOML(&p, data)
	case ".json":
		err = parseJSON(&p, data)
	default:
		err = fmt.Errorf("want a .toml or .json file")
	}
	if err != nil {
		return p, fmt.Errorf("%s%w", file, err)
	}
	if p.Title == "" {
		p.Title = "your profile (" + filepath.Base(file) + ")"
	}
	return p, nil
}

// nameOf splits a profile file's name into the profile's name and the
// extension.
func nameOf(file string) (name, ext string) {
	base := filepath.Base(file)
	ext = filepath.Ext(base)
	return strings.TrimSuffix(base, ext), ext
}

// UserError is a user profile's file that could not be read: Name is the
// profile it holds, Err names the file.
type UserError struct {
	Name string
	Err  error
}

func (e *UserError) Error() string { return e.Err.Error() }
func (e *UserError) Unwrap() error { return e.Err }

// lineError is an error at a line of the file: printed after its name
// as ":LINE: ...".
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return fmt.Sprintf(":%d: %s", e.line, e.msg) }

func atLine(line int, format string, a ...any) error {
	return &lineError{line: line, msg: fmt.Sprintf(format, a...)}
}

// add puts the key read at line into p.
func (p *Profile) add(key string, v any, line int) error {
	reserved := key
	if p.settingsOnly {
		reserved = "" // a configuration file has no title or sources: every key is a setting
	}
	switch reserved {
	case keyTitle:
		s, ok := v.(string)
		if !ok {
			return atLine(line, "title: want a string")
		}
		p.Title = s
		return nil
	case keySources:
		list, ok := v.([]any)
		if !ok {
			return atLine(line, "sources: want a list of strings")
		}
		for _, e := range list {
			s, ok := e.(string)
			if !ok {
				return atLine(line, "sources: want a list of strings")
			}
			p.Sources = append(p.Sources, s)
		}
		return nil
	}
	var val string
	switch x := v.(type) {
	case string:
		val = x
	case bool:
		val = strconv.FormatBool(x)
	case int64:
		val = strconv.FormatInt(x, 10)
	case float64:
		val = strconv.FormatFloat(x, 'g', -1, 64)
	case json.Number:
		val = x.String()
	default:
		return atLine(line, "%s: want a string, number or boolean, the value the flag --%s takes", key, key)
	}
	if first, ok := p.Lines[key]; ok {
		return atLine(line, "%s is set twice (first on line %d)", key, first)
	}
	if p.Lines == nil {
		p.Lines = map[string]int{}
	}
	p.Flags = append(p.Flags, Flag{Key: key, Value: val})
	p.Lines[key] = line
	return nil
}

func parseTOML(p *Profile, data []byte) error {
	var m map[string]any
	md, err := toml.Decode(string(data), &m)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return atLine(pe.Position.Line, "%s", pe.Message)
		}
		return fmt.Errorf(": %w", err)
	}
	for _, k := range md.Keys() {
		line := tomlLine(data, k[0])
		if _, table := m[k[0]].(map[string]any); table || len(k) > 1 {
			return atLine(line, "%s: tables are not used here; write one key per setting at the top of the file", k[0])
		}
		if err := p.add(k[0], m[k[0]], line); err != nil {
			return err
		}
	}
	return nil
}

// tomlLine is the line on which the top-level key is set (or its table
// opens): the decoder keeps key positions to itself.
func tomlLine(data []byte, key string) int {
	q := regexp.QuoteMeta(key)
	re := regexp.MustCompile(`^\s*(\[\s*)?(` + q + `|"` + q + `"|'` + q + `')\s*[=.\]]`)
	for i, l := range bytes.Split(data, []byte("\n")) {
		if re.Match(l) {
			return i + 1
		}
	}
	return 0
}

func parseJSON(p *Profile, data []byte) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	line := func() int { return 1 + bytes.Count(data[:d.InputOffset()], []byte("\n")) }
	bad := func(err error) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return atLine(1+bytes.Count(data[:se.Offset], []byte("\n")), "%v", err)
		}
		if errors.Is(err, io.EOF) {
			return atLine(line(), "the file ends inside the object")
		}
		return atLine(line(), "%v", err)
	}
	if t, err := d.Token(); err != nil {
		return bad(err)
	} else if t != json.Delim('{') {
		return atLine(line(), "want an object: {\"title\": ..., \"rate\": \"20mbit\", ...}")
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return bad(err)
		}
		key, l := t.(string), line()
		var v any
		if err := d.Decode(&v); err != nil {
			return bad(err)
		}
		if _, ok := v.(map[string]any); ok {
			return atLine(l, "%s: objects are not used here; write one key per setting", key)
		}
		if err := p.add(key, v, l); err != nil {
			return err
		}
	}
	if _, err := d.Token(); err != nil {
		return bad(err)
	}
	if _, err := d.Token(); err != io.EOF {
		return atLine(line(), "more after the object")
	}
	return nil
}

// ParseSettings reads a configuration file (pi2hop's --config): the
// format of a user profile, one key per setting named as its flag
// without the dashes, with no title or sources (those are keys like any
// other). A file named .json is JSON, any other TOML. The result's Name
// is empty; Lines keeps each key's line.
func ParseSettings(file string, data []byte) (Profile, error) {
	p := Profile{File: file, settingsOnly: true}
	var err error
	if filepath.Ext(file) == ".json" {
		err = parseJSON(&p, data)
	} else {
		err = parseTOML(&p, data)
	}
	if err != nil {
		return p, fmt.Errorf("%s%w", file, err)
	}
	return p, nil
}
