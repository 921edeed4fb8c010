package instance

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/pi2hop/pi2hop/instance/profile"
	"github.com/pi2hop/pi2hop/shaper"
)

// ProfileSettings returns the settings of the profile called name (a
// preset, or else one of the invoking user's), read through the settings
// table as if each were given as a flag.
func ProfileSettings(name string) (Settings, error) {
	p, err := findProfile(name)
	if err != nil {
		return Settings{}, err
	}
	return settingsOf(p)
}

// WithProfile lays the settings given explicitly over a profile's: each
// one given wins. A shared setting given (rate) also replaces the
// profile's per-direction values of it (up-rate, down-rate), since the
// user asked for it in both directions; a rate and a rate trace replace
// each other at every level, as one setting. Another queue discipline
// given (--aqm) drops the profile's queue knobs, which were chosen for
// its own discipline: the one given starts from its defaults. Auto-tuning
// given (max-rtt, typical-rtt) drops the profile's values of what it
// tunes, so that no warning blames the user for them.
func WithProfile(p, given Settings) Settings {
	pv := reflect.ValueOf(&p).Elem()
	for _, st := range table {
		newKind := given.AQM != nil && (p.AQM == nil || *p.AQM != *given.AQM)
		if newKind && st.Kinds != nil || given.tuned() && st.Tuned {
			pv.Field(st.field).SetZero()
		}
	}
	for _, k := range given.Given() {
		st, _ := Lookup(k)
		if st.Dir != "" {
			continue
		}
		g := linkGroup(k)
		for _, other := range table {
			if other.Dir != "" && linkGroup(other.Key) == g {
				pv.Field(other.field).SetZero()
			}
		}
	}
	return p.Merge(given)
}

// linkGroup names what a link setting sets, whatever its direction or
// form: "up-rate-trace" and "rate" are both "rate".
func linkGroup(key string) string {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "up-"), "down-")
	if key == "rate-trace" {
		return "rate"
	}
	return key
}

// OneWay returns s for a single link, as replay models one: dir's
// per-direction values ("up" or "down") become the shared ones and the
// other direction's are dropped.
func (s Settings) OneWay(dir string) Settings {
	v := reflect.ValueOf(&s).Elem()
	for _, st := range table {
		if st.Dir == "" {
			continue
		}
		f := v.Field(st.field)
		if st.Dir == dir && !f.IsNil() {
			shared := strings.TrimPrefix(st.Key, dir+"-")
			for _, other := range table {
				if other.Dir == "" && linkGroup(other.Key) == linkGroup(shared) {
					v.Field(other.field).SetZero()
				}
			}
			sh, _ := Lookup(shared)
			v.Field(sh.field).Set(f)
		}
	}
	for _, st := range table {
		if st.Dir != "" {
			v.Field(st.field).SetZero()
		}
	}
	return s
}

// loadRateTrace reads a rate trace: one shipped in the binary when path
// is builtin:NAME, a file otherwise.
func loadRateTrace(path string) (shaper.Rate, error) {
	name, ok := strings.CutPrefix(path, profile.TracePrefix)
	if !ok {
		return shaper.LoadRateTrace(path)
	}
	data, ok := profile.Trace(name)
	if !ok {
		return nil, fmt.Errorf("no rate trace %q shipped with pi2hop: want one of %s", path, builtinTraces())
	}
	r, err := shaper.ParseRateTrace(data)
	if err != nil {
		return nil, fmt.Errorf("rate trace %s: %w", path, err)
	}
	return r, nil
}

// ProfileArgs returns a profile's settings as the command-line flags that
// give the same: --down-rate 50mbit ..., a switch as --name=value.
func ProfileArgs(p profile.Profile) []string {
	var args []string
	for _, f := range p.Flags {
		st, ok := Lookup(f.Key)
		if !ok {
			args = append(args, "--"+f.Key, f.Value)
			continue
		}
		var s Settings
		if st.Bind(&s).IsBoolFlag() {
			args = append(args, "--"+st.FlagName()+"="+f.Value)
		} else {
			args = append(args, "--"+st.FlagName(), f.Value)
		}
	}
	return args
}

// ProfileInfo is a profile as `pi2hop profiles` shows it (its JSON is the
// command's --json output).
type ProfileInfo struct {
	Name    string         `json:"name"`
	Title   string         `json:"title"`
	Flags   []profile.Flag `json:"flags"`
	Args    []string       `json:"args"` // the same as command-line flags
	Sources []string       `json:"sources"`
	Traces  []TraceInfo    `json:"traces,omitempty"`
	// File is the user's file a profile of their own comes from; Error
	// says why it cannot be used; Shadowed that a preset of its name wins.
	File     string `json:"file,omitempty"`
	Error    string `json:"error,omitempty"`
	Shadowed bool   `json:"shadowed,omitempty"`
}

// TraceInfo is a shipped rate trace a profile uses, with its mean rate
// worked out from the file.
type TraceInfo struct {
	Name          string `json:"name"` // as --rate-trace takes it: builtin:lte-down
	Opportunities int    `json:"opportunities"`
	LoopMs        int64  `json:"loop_ms"`
	MeanBPS       uint64 `json:"mean_bps"` // opportunities of 1500 bytes per loop
}

// Profiles describes every preset, in the order they are listed, then
// the invoking user's own profiles by name, and a line for each of their
// files that cannot be read.
func Profiles() []ProfileInfo {
	var out []ProfileInfo
	for _, p := range profile.All() {
		out = append(out, profileInfo(p))
	}
	ps, errs := UserProfiles()
	for _, p := range ps {
		info := profileInfo(p)
		info.File = p.File
		if _, err := settingsOf(p); err != nil {
			info.Error = err.Error()
		}
		_, info.Shadowed = profile.Lookup(p.Name)
		out = append(out, info)
	}
	for _, err := range errs {
		info := ProfileInfo{Error: err.Error(), Flags: []profile.Flag{}, Args: []string{}, Sources: []string{}}
		if ue := (*profile.UserError)(nil); errors.As(err, &ue) {
			info.Name = ue.Name
		}
		out = append(out, info)
	}
	return out
}

// profileInfo describes p with the mean rate of each shipped trace it uses.
func profileInfo(p profile.Profile) ProfileInfo {
	info := ProfileInfo{Name: p.Name, Title: p.Title, Flags: p.Flags, Args: ProfileArgs(p), Sources: p.Sources}
	if info.Flags == nil {
		info.Flags = []profile.Flag{}
	}
	if info.Sources == nil {
		info.Sources = []string{}
	}
	for _, f := range p.Flags {
		name, ok := strings.CutPrefix(f.Value, profile.TracePrefix)
		if !ok || linkGroup(f.Key) != "rate" {
			continue
		}
		if n, loop, ok := profile.TraceLoop(name); ok && loop > 0 {
			info.Traces = append(info.Traces, TraceInfo{Name: f.Value, Opportunities: n, LoopMs: loop,
				MeanBPS: uint64(n) * 1500 * 8 * 1000 / uint64(loop)})
		}
	}
	return info
}

// Shadowed says which shared settings of a set request change nothing
// because s, the merged settings, holds a per-direction value of the same
// setting in both directions (from a profile or an earlier flag): set
// --rate on a hop started with --profile lte keeps both traces.
func (s Settings) Shadowed(set Settings) []string {
	var out []string
	for _, k := range set.Given() {
		st, _ := Lookup(k)
		if st.Dir != "" || st.Kinds != nil || st.Fixed {
			continue
		}
		var in [2][]string // up, down: the keys in force
		for _, o := range table {
			if o.Dir != "" && linkGroup(o.Key) == linkGroup(k) && s.Has(o.Key) {
				i := 0
				if o.Dir == "down" {
					i = 1
				}
				in[i] = append(in[i], o.Key)
			}
		}
		if len(in[0]) > 0 && len(in[1]) > 0 {
			out = append(out, fmt.Sprintf("%s changes nothing: %s and %s are set and win in each direction; change those instead",
				k, in[0][0], in[1][0]))
		}
	}
	return out
}

// builtinTraces lists the rate traces shipped, as --rate-trace takes them.
func builtinTraces() string {
	return profile.TracePrefix + strings.Join(profile.TraceNames(), ", "+profile.TracePrefix)
}
