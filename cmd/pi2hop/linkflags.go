package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/instance/profile"
	"github.com/pi2hop/pi2hop/internal/clidoc"
	"github.com/pi2hop/pi2hop/internal/flagvalue"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/spf13/pflag"
)

// linkFlags are the flags that describe a bottleneck: the link (rate,
// delay, loss) and its queue discipline (--aqm and every tc-dualpi2 knob),
// one per row of instance's settings table, each bound to its field of
// an instance.Settings. replay uses one direction; run, shell, share and
// set use two ("up", "down"), which share the AQM settings and may differ
// in rate, delay, trace, jitter and bursts.
type linkFlags struct {
	fs      *pflag.FlagSet
	bidir   bool
	s       instance.Settings  // what the flags given wrote
	profile flagvalue.Choice   // --profile: a preset the flags given override; "" for none
	dir     flagvalue.Choice   // replay's --direction: the profile's direction it models
	config  string             // --config: a file of flags the flags given override
	file    *instance.Settings // the settings --config gives, once read (applyConfig)
}

// addLinkFlags declares the link and AQM flags on fs. With bidir it also
// declares the per-direction --up-*/--down-* flags. tc's keywords where
// ours differ are hidden aliases (--coupling-factor, --overflow, --noecn),
// named in the flag's usage.
func addLinkFlags(fs *pflag.FlagSet, bidir bool) *linkFlags {
	f := &linkFlags{fs: fs, bidir: bidir}
	for _, st := range instance.Table() {
		if st.Dir != "" && !bidir {
			continue
		}
		v := st.Bind(&f.s)
		fs.Var(v, st.FlagName(), linkUsage(st, ""))
		clidoc.Annotate(fs, st.FlagName(), clidoc.GroupAnnotation, st.Group())
		if _, same := st.DefaultsByKind(); st.QueueKnob() && !same {
			fs.Lookup(st.FlagName()).DefValue = "" // the usage gives each kind's
		}
		for _, a := range st.TCAliases() {
			if a.Name == "interval" {
				continue // across pi2hop --interval is a repeat interval (spelled --every): CoDel's stays --codel-interval
			}
			if a.Word == "" {
				fs.Var(v, a.Name, st.Usage)
			} else {
				fs.Var(&switchAlias{v, a.Word}, a.Name, st.Usage)
				fs.Lookup(a.Name).NoOptDefVal = a.Word
			}
			clidoc.Annotate(fs, a.Name, tcAliasAnnotation, a.Keyword)
			if err := fs.MarkHidden(a.Name); err != nil {
				panic(err)
			}
		}
	}
	return f
}

// tcAliasAnnotation marks a hidden flag that is tc's keyword for one of
// ours; its value is the keyword.
const tcAliasAnnotation = "pi2hop-tc-alias"

// isFixed reports whether flag is a setting a running hop cannot change.
func isFixed(flag string) bool {
	for _, st := range instance.Table() {
		if st.FlagName() == flag {
			return st.Fixed
		}
	}
	return false
}

// addLiveLinkFlags declares set's link flags: those a running hop can
// change are listed, with no default (set changes from what runs); the
// fixed ones (--aqm, --mtu, --seed) are hidden, parsed only to be refused
// with a reason.
func addLiveLinkFlags(fs *pflag.FlagSet) *linkFlags {
	f := addLinkFlags(fs, true)
	for _, st := range instance.Table() {
		clidoc.Annotate(fs, st.FlagName(), clidoc.NoDefaultAnnotation, "")
		fs.Lookup(st.FlagName()).Usage = linkUsage(st, "-")
		if st.Fixed {
			if err := fs.MarkHidden(st.FlagName()); err != nil {
				panic(err)
			}
		}
	}
	return f
}

// linkUsage is st's help: its usage, the defaults per queue kind when
// they differ ("" kind: all kinds; "-": none, as set shows), and tc's
// keywords where they are not the flag's name.
func linkUsage(st instance.Setting, kind string) string {
	u := st.Usage
	if d, same := st.DefaultsByKind(); st.QueueKnob() && !same && kind == "" {
		u += " (default " + d + ")"
	}
	var kws []string
	for _, a := range st.TCAliases() {
		if !slices.Contains(kws, a.Keyword) {
			kws = append(kws, a.Keyword)
		}
	}
	if len(kws) > 0 {
		u += " (tc: " + strings.Join(kws, ", ") + ")"
	}
	return u
}

// focusQueue narrows a command's help to one queue kind: the knobs the
// kind does not take are hidden, the others show the kind's own default.
func focusQueue(fs *pflag.FlagSet, kind string) {
	for _, st := range instance.Table() {
		f := fs.Lookup(st.FlagName())
		if f == nil || !st.QueueKnob() {
			continue
		}
		if st.Kinds != nil && !slices.Contains(st.Kinds, kind) {
			f.Hidden = true
			continue
		}
		if _, live := f.Annotations[clidoc.NoDefaultAnnotation]; !live {
			f.Usage = linkUsage(st, kind)
		}
		f.DefValue, _ = instance.KindDefault(st.Key, kind)
	}
}

// switchAlias is a tc keyword that stands for one value of a setting
// (--overflow, --noecn): it takes no value of its own.
type switchAlias struct {
	v    pflag.Value
	word string
}

func (a *switchAlias) Set(s string) error {
	if s != a.word {
		return fmt.Errorf("takes no value: it is tc's keyword for %s", a.word)
	}
	return a.v.Set(s)
}
func (a *switchAlias) String() string { return "" }
func (a *switchAlias) Type() string   { return "" }

// addProfileFlag declares --profile (and, on replay's one link,
// --direction, which picks the profile's direction to model).
func (f *linkFlags) addProfileFlag() {
	f.profile = flagvalue.Choice{Choices: profile.Names(), More: instance.UserProfileNames}
	f.fs.Var(&f.profile, "profile", "start from a preset access link `NAME`: "+strings.Join(profile.Names(), ", ")+
		", or one of yours in ~/"+profile.UserDir+" (a preset wins over a file of its name); each flag given overrides its value (pi2hop profiles lists their settings and sources)")
	clidoc.Annotate(f.fs, "profile", clidoc.GroupAnnotation, "link")
	if f.bidir {
		f.fs.StringVar(&f.config, "config", "", instance.ConfigUsage)
		clidoc.Annotate(f.fs, "config", clidoc.GroupAnnotation, "link")
	} else {
		f.dir = flagvalue.Choice{Val: "down", Choices: []string{"down", "up"}}
		f.fs.Var(&f.dir, "direction", "with --profile, the direction of the preset to model: down (server to client) or up")
		clidoc.Annotate(f.fs, "direction", clidoc.GroupAnnotation, "link")
	}
}

// applyConfig reads --config: its settings lie under the flags given
// (resolved), its command flags are set unless given (instance.ReadConfig).
func (f *linkFlags) applyConfig() error {
	if f.config == "" {
		return nil
	}
	c, err := instance.ReadConfig(f.config, func(name string) bool { return f.fs.Lookup(name) != nil })
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	f.file = &c.Settings
	for _, fl := range c.Flags {
		if f.fs.Changed(fl.Key) {
			continue
		}
		if err := f.fs.Set(fl.Key, fl.Value); err != nil {
			return fmt.Errorf("--config: %s: %s = %q: %w", c.Where(fl.Key), fl.Key, fl.Value, err)
		}
	}
	return nil
}

// seed returns --seed.
func (f *linkFlags) seed() uint64 {
	if s := f.settings(); s.Seed != nil {
		return *s.Seed
	}
	return instance.DefaultSeed
}

// mtuBytes returns --mtu.
func (f *linkFlags) mtuBytes() int {
	if s := f.settings(); s.MTU != nil {
		return *s.MTU
	}
	return instance.DefaultMTU
}

// given reports whether the flag named was set on the command line.
func (f *linkFlags) given(name string) bool {
	return f.fs.Lookup(name) != nil && f.fs.Changed(name)
}

// settings returns the flags given as instance.Settings: what the library
// resolves into a configuration, and what a set request sends. A flag
// counts as given when pflag says so; one marked given without a value
// carries its default.
func (f *linkFlags) settings() instance.Settings {
	s, _ := f.resolved()
	return s
}

// resolved is settings with the error of a profile that cannot be read.
// The flags given win over --profile's values (instance.WithProfile).
func (f *linkFlags) resolved() (instance.Settings, error) {
	s := f.s
	for _, st := range instance.Table() {
		if f.given(st.FlagName()) {
			st.SetDefault(&s)
		}
	}
	if f.profile.Val == "" && f.file == nil {
		if f.given("direction") {
			return s, fmt.Errorf("--direction picks a direction of --profile: give --profile too")
		}
		return s, nil
	}
	var p instance.Settings
	if f.profile.Val != "" {
		var err error
		if p, err = instance.ProfileSettings(f.profile.Val); err != nil {
			return s, fmt.Errorf("--profile: %w", err)
		}
	}
	if !f.bidir {
		p = p.OneWay(f.dir.Val)
	}
	if f.file != nil { // the file's settings stand to the profile as flags, and to the flags as a profile
		p = instance.WithProfile(p, *f.file)
	}
	return instance.WithProfile(p, s), nil
}

// direction returns the link and queue configuration for one direction:
// "up" or "down" with bidir flags, "" for the single direction of replay
// (or both directions' shared settings). It reads a rate trace file if one
// is named, so call it once per direction.
func (f *linkFlags) direction(name string) (shaper.Config, aqm.Spec, error) {
	if name != "" && !f.bidir {
		return shaper.Config{}, aqm.Spec{}, fmt.Errorf("link direction %q: this command has one direction", name)
	}
	s, err := f.resolved()
	if err != nil {
		return shaper.Config{}, aqm.Spec{}, err
	}
	d, err := s.Direction(name)
	if err != nil {
		return shaper.Config{}, aqm.Spec{}, s.FlagError(err, f.given)
	}
	return d.Link, d.Queue, nil
}

// hopConfig builds both directions of a live hop from the link flags.
func (f *linkFlags) hopConfig(name string) (hop.Config, error) {
	s, err := f.resolved()
	if err != nil {
		return hop.Config{}, err
	}
	c, err := s.Resolve(name)
	return c, s.FlagError(err, f.given)
}

// warnings are the library's words on flags without effect (see
// instance.Settings.Warnings), in flag terms.
func (f *linkFlags) warnings() []string { return f.settings().Warnings() }
