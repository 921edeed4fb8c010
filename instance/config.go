package instance

import (
	"bytes"
	"cmp"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/pi2hop/pi2hop/instance/profile"
	"github.com/pi2hop/pi2hop/internal/clidoc"
)

// A configuration file (--config FILE of run, shell and share) is a
// user profile's format without title or sources: TOML (JSON when named
// .json), one key per setting named as its flag, with the flag's value
// (rate = "10mbit", nqb = true), and a few of the command's own flags
// (ConfigFlags). It stands for flags given on the command line before
// the others: a flag given there wins over the file's value of it, as
// over a profile's (WithProfile: --rate also wins over the file's
// up-rate, --aqm drops the file's queue knobs). `pi2hop config dump`
// writes one from a running instance (ConfigTOML).

// ConfigUsage is --config's help.
const ConfigUsage = "read flags from `FILE` (TOML, JSON if named .json), one key per flag without its dashes: rate = \"10mbit\", aqm = \"dualpi2\"; " +
	"besides the link and queue settings it may set profile, name, metrics, web, web-token and capture; a flag given on the command line wins over the file's value, as over a profile's. " +
	"pi2hop config dump writes one from a running instance"

// ConfigFlags are the command flags beside the settings that a
// configuration file may set, where the command has them: what names
// and shows the instance and what starts from a profile. The rest
// (interfaces, --nat, logging) stay on the command line, which says what
// this run does with the configuration.
var ConfigFlags = []string{"profile", "name", "metrics", "web", "web-token", "capture"}

// A ConfigFile is a configuration file read: the settings it gives and
// the command's own flags it sets, in file order.
type ConfigFile struct {
	Path     string
	Settings Settings
	Flags    []profile.Flag
	Lines    map[string]int // each key's line
}

// Where names key's line in the file: FILE:LINE.
func (c ConfigFile) Where(key string) string { return fmt.Sprintf("%s:%d", c.Path, c.Lines[key]) }

// ReadConfig reads the configuration file at path as the invoking user
// may (profile.ReadFile: no symbolic link followed, the user's own
// regular file of at most 64 KiB) and parses it (ParseConfig).
func ReadConfig(path string, has func(flag string) bool) (ConfigFile, error) {
	_, uid, err := profileOwner()
	if err != nil {
		return ConfigFile{}, err
	}
	data, err := profile.ReadFile(path, uid)
	if err != nil {
		return ConfigFile{}, err
	}
	return ParseConfig(path, data, has)
}

// ParseConfig reads a configuration file's data: each key a setting of
// the table or one of ConfigFlags the command has (has). An unknown key
// or a value its flag refuses is an error naming FILE:LINE, with the
// nearest key for a misspelt one.
func ParseConfig(path string, data []byte, has func(flag string) bool) (ConfigFile, error) {
	p, err := profile.ParseSettings(path, data)
	if err != nil {
		return ConfigFile{}, err
	}
	c := ConfigFile{Path: path, Lines: p.Lines}
	for _, f := range p.Flags {
		st, ok := Lookup(f.Key)
		switch {
		case ok:
			if err := st.Bind(&c.Settings).Set(f.Value); err != nil {
				return ConfigFile{}, fmt.Errorf("%s: %s = %q: %w", c.Where(f.Key), f.Key, f.Value, err)
			}
		case slices.Contains(ConfigFlags, f.Key) && has(f.Key):
			c.Flags = append(c.Flags, f)
		default:
			return ConfigFile{}, fmt.Errorf("%s: %s: no such setting (a key is a flag's name without the dashes: rate, delay, aqm, ...)%s",
				c.Where(f.Key), f.Key, clidoc.DidYouMean(f.Key, "", configKeys(has)))
		}
	}
	return c, nil
}

// configKeys are the keys a configuration file of a command with the
// flags has may hold.
func configKeys(has func(string) bool) []string {
	var keys []string
	for _, st := range table {
		keys = append(keys, st.Key)
	}
	for _, k := range ConfigFlags {
		if has(k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// ConfigTOML writes s as a configuration file that reads back as s: one
// line per setting given, in help's order. With all it also writes every
// other setting in force at its value (see withDefaults).
func ConfigTOML(s Settings, all bool) ([]byte, error) {
	if all {
		var err error
		if s, err = s.withDefaults(); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	for _, st := range table {
		if !s.Has(st.Key) {
			continue
		}
		v := st.Bind(&s)
		var val any = v.String()
		if v.IsBoolFlag() {
			val, _ = strconv.ParseBool(v.String())
		}
		if err := toml.NewEncoder(&b).Encode(map[string]any{st.Key: val}); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// withDefaults is s with each setting not given at the value in force:
// the link's defaults, and the queue knobs as s's queue discipline
// resolves them. Left out are what would change the meaning once
// pinned: the per-direction rows (they follow the shared ones), the
// values auto-tuning sets, DualPI2's memlimit (it follows limit), the
// rate beside a rate trace, and settings with no value by default.
func (s Settings) withDefaults() (Settings, error) {
	spec, err := s.QueueSpec()
	if err != nil {
		return s, err
	}
	inForce := specSettings(spec)
	var zero Settings
	out := s
	v, in := reflect.ValueOf(&out).Elem(), reflect.ValueOf(inForce)
	for _, st := range table {
		switch {
		case s.Has(st.Key), st.Dir != "", st.Lifts, st.Tuned && s.tuned(),
			st.Key == "rate" && s.RateTrace != nil,
			st.Key == "memlimit" && dualOf(&spec) != nil:
			continue
		case st.Onto.get != nil:
			if f := in.Field(st.field); !f.IsNil() {
				v.Field(st.field).Set(f)
			}
		default:
			if text := st.Bind(&zero).String(); text != "" {
				if err := st.Bind(&out).Set(text); err != nil {
					return s, fmt.Errorf("%s: default %q: %w", st.Key, text, err)
				}
			}
		}
	}
	return out, nil
}

// withAbsTraces is s with its rate trace files named by absolute path
// (the strings copied, s's left alone): the instance keeps them so, and
// a configuration file dumped from it reads back from any folder.
func (s Settings) withAbsTraces() Settings {
	for _, p := range []**string{&s.RateTrace, &s.UpRateTrace, &s.DownRateTrace} {
		if *p != nil && !strings.HasPrefix(**p, profile.TracePrefix) {
			if abs, err := filepath.Abs(**p); err == nil {
				*p = &abs
			}
		}
	}
	return s
}

// DumpConfig asks instance name (with "", the only one running, else
// DefaultName) for its settings in force and writes them as a
// configuration file (ConfigTOML), headed by a comment that says where
// they come from.
func DumpConfig(name string, all bool) ([]byte, error) {
	name, err := Pick(cmp.Or(name, DefaultName), name != "")
	if err != nil {
		return nil, err
	}
	s, err := SettingsOf(name)
	if err != nil {
		return nil, err
	}
	b, err := ConfigTOML(s, all)
	if err != nil {
		return nil, err
	}
	what := "the settings given"
	if all {
		what = "every setting in force"
	}
	head := fmt.Sprintf("# pi2hop instance %q: %s; read back with --config FILE (run, shell, share)\n", name, what)
	return append([]byte(head), b...), nil
}
