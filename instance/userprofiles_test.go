package instance

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/instance/profile"
)

// userProfiles points profileOwner at a home holding files (name: text)
// in its profile folder for the test.
func userProfiles(t *testing.T, files map[string]string) string {
	home := t.TempDir()
	dir := filepath.Join(home, profile.UserDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := profileOwner
	profileOwner = func() (string, uint32, error) { return home, uint32(os.Getuid()), nil }
	t.Cleanup(func() { profileOwner = old })
	return dir
}

// TestUserProfileSettings: --profile finds a user's file after the
// presets, reads it as the flags it names, names the file and line of a
// bad key or value, and a preset wins over a file of its name.
func TestUserProfileSettings(t *testing.T) {
	dir := userProfiles(t, map[string]string{
		"office.toml": "title = \"office\"\nrate = \"20mbit\"\ndelay = \"15ms\"\ncoupling = 3\n",
		"typo.toml":   "rate = \"20mbit\"\n\nrat = \"1mbit\"\n",
		"badval.json": "{\n\"rate\": \"20mbit\",\n\"delay\": \"fast\"\n}",
		"broken.toml": "rate = \n",
		"lte.toml":    "rate = \"1mbit\"\n",
	})
	s, err := ProfileSettings("office")
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Direction("down")
	if err != nil {
		t.Fatal(err)
	}
	if d.Link.Delay != 15e6 || s.Coupling == nil || *s.Coupling != 3 {
		t.Errorf("office: delay %v coupling %v, want 15ms and 3", d.Link.Delay, s.Coupling)
	}
	for name, want := range map[string]string{
		"typo":   filepath.Join(dir, "typo.toml") + ":3: rat: no such setting",
		"badval": filepath.Join(dir, "badval.json") + ":3: --delay fast: ",
		"broken": filepath.Join(dir, "broken.toml") + ":1: ",
		"nosuch": "unknown profile \"nosuch\": want one of docsis-ll, lte, wifi, geo-sat, dsl, fiber; yours: badval, broken, lte, office, typo, or a file nosuch.toml",
	} {
		if _, err := ProfileSettings(name); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: error %v, want one starting %q", name, err, want)
		}
	}
	lte, err := ProfileSettings("lte")
	if err != nil || lte.DownRateTrace == nil {
		t.Errorf("lte: %+v, %v: want the preset's rate trace, not the file's rate", lte, err)
	}
	var got []string
	for _, p := range Profiles() {
		if p.File == "" && p.Error == "" {
			continue
		}
		got = append(got, p.Name)
		switch {
		case p.Name == "lte" && !p.Shadowed:
			t.Errorf("lte: not marked shadowed")
		case p.Name == "office" && (p.Title != "office" || strings.Join(p.Args, " ") != "--rate 20mbit --delay 15ms --coupling 3"):
			t.Errorf("office: %+v", p)
		case p.Name == "typo" && !strings.Contains(p.Error, "rat: no such setting"):
			t.Errorf("typo: error %q", p.Error)
		}
	}
	var text bytes.Buffer
	for _, p := range Profiles() {
		p.WriteHeading(&text)
	}
	for _, want := range []string{
		"lte: LTE cellular access",
		"office (yours, " + filepath.Join(dir, "office.toml") + "): office\n",
		"lte (yours, " + filepath.Join(dir, "lte.toml") + "): your profile (lte.toml)\n  not used: the preset lte wins over your file; rename it to use it\n",
		"typo (yours, " + filepath.Join(dir, "typo.toml") + "): your profile (typo.toml)\n  cannot be used: " + filepath.Join(dir, "typo.toml") + ":3: rat: no such setting",
		"broken (yours): cannot be used: " + filepath.Join(dir, "broken.toml") + ":1: ",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("profiles' headings lack %q:\n%s", want, &text)
		}
	}
	if strings.Join(got, " ") != "badval lte office typo broken" {
		t.Errorf("user profiles listed %v, want the readable ones by name, then the broken file", got)
	}
}
