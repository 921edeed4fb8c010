package instance

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pi2hop/pi2hop/instance/profile"
	"github.com/pi2hop/pi2hop/invoker"
)

// profileOwner is whose profiles --profile reads: the invoking user's,
// behind sudo too. Tests point it elsewhere.
var profileOwner = func() (home string, uid uint32, err error) {
	u, err := invoker.FromEnv()
	return u.Home, u.UID, err
}

// UserProfiles reads the invoking user's own profiles (profile.ReadUser),
// with an error per file that could not be read.
func UserProfiles() ([]profile.Profile, []error) {
	home, uid, err := profileOwner()
	if err != nil {
		return nil, []error{err}
	}
	return profile.ReadUser(home, uid)
}

// UserProfileNames lists the names of the invoking user's profile files,
// readable or not (--profile takes them and says what is wrong with one).
func UserProfileNames() []string {
	ps, errs := UserProfiles()
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	for _, err := range errs {
		if ue := (*profile.UserError)(nil); errors.As(err, &ue) {
			names = append(names, ue.Name)
		}
	}
	slices.Sort(names)
	return names
}

// findProfile returns the profile called name: a preset, which wins over
// a file of the user's by the same name, else the user's own.
func findProfile(name string) (profile.Profile, error) {
	if p, ok := profile.Lookup(name); ok {
		return p, nil
	}
	ps, errs := UserProfiles()
	for _, p := range ps {
		if p.Name == name {
			return p, nil
		}
	}
	for _, err := range errs {
		if ue := (*profile.UserError)(nil); errors.As(err, &ue) && ue.Name == name {
			return profile.Profile{}, err
		}
	}
	want := strings.Join(profile.Names(), ", ")
	if names := UserProfileNames(); len(names) > 0 {
		want += "; yours: " + strings.Join(names, ", ")
	}
	return profile.Profile{}, fmt.Errorf("unknown profile %q: want one of %s, or a file %s.toml of yours in ~/%s",
		name, want, name, profile.UserDir)
}

// settingsOf reads a profile's flags through the settings table, as if
// each were given as a flag; a user's file is named with the line of
// the setting that is wrong.
func settingsOf(p profile.Profile) (Settings, error) {
	var s Settings
	for _, f := range p.Flags {
		where := "profile " + p.Name
		if p.File != "" {
			where = fmt.Sprintf("%s:%d", p.File, p.Lines[f.Key])
		}
		st, ok := Lookup(f.Key)
		if !ok {
			if p.File != "" {
				return Settings{}, fmt.Errorf("%s: %s: no such setting (a key is a flag's name without the dashes: rate, delay, aqm, ...)", where, f.Key)
			}
			return Settings{}, fmt.Errorf("%s: no setting %q", where, f.Key)
		}
		if err := st.Bind(&s).Set(f.Value); err != nil {
			return Settings{}, fmt.Errorf("%s: --%s %s: %w", where, st.FlagName(), f.Value, err)
		}
	}
	return s, nil
}

// WriteHeading writes the lines that open p in `pi2hop profiles`: its
// name and title, and for a profile of the user's the file it comes from
// and why it is not used, if it is not. It reports whether the rest
// (flags, traces, sources) follows: not for a file that cannot be read.
func (p ProfileInfo) WriteHeading(w io.Writer) bool {
	switch {
	case p.File == "" && p.Error != "":
		fmt.Fprintf(w, "%s (yours): cannot be used: %s\n", p.Name, p.Error)
		return false
	case p.File != "":
		fmt.Fprintf(w, "%s (yours, %s): %s\n", p.Name, p.File, p.Title)
	default:
		fmt.Fprintf(w, "%s: %s\n", p.Name, p.Title)
	}
	if p.Shadowed {
		fmt.Fprintf(w, "  not used: the preset %s wins over your file; rename it to use it\n", p.Name)
	}
	if p.File != "" && p.Error != "" {
		fmt.Fprintf(w, "  cannot be used: %s\n", p.Error)
	}
	return true
}
