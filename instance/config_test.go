package instance

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/hop"
)

// settingsOfFlags reads flag, value pairs as the command line would.
func settingsOfFlags(t *testing.T, kv ...string) Settings {
	t.Helper()
	var s Settings
	for i := 0; i < len(kv); i += 2 {
		st, ok := Lookup(kv[i])
		if !ok {
			t.Fatalf("no setting %q", kv[i])
		}
		if err := st.Bind(&s).Set(kv[i+1]); err != nil {
			t.Fatalf("--%s %s: %v", kv[i], kv[i+1], err)
		}
	}
	return s
}

func hasNameAndWeb(flag string) bool { return flag == "name" || flag == "web" }

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		file, data string
		want       Settings
		flags      string // the command flags set, "key=value ..."
		err        []string
	}{
		{file: "c.toml", data: "# a lab link\nrate = \"20mbit\"\nup-delay = \"3ms\"\nnqb = true\nlimit = 100\nname = \"lab1\"\n",
			want: Settings{Rate: ptr(uint64(20e6)), UpDelay: ptr(3 * time.Millisecond), NQB: ptr(true), Limit: ptr(uint32(100))}, flags: "name=lab1"},
		{file: "c.json", data: "{\"aqm\": \"codel\",\n \"target\": \"5ms\"}", want: Settings{AQM: ptr("codel"), Target: ptr(5 * time.Millisecond)}},
		{file: "c.toml", data: "delay = \"10ms\"\nrat = \"10mbit\"\n", err: []string{"c.toml:2: rat: no such setting", "did you mean rate?"}},
		{file: "c.toml", data: "\n\ndelay = \"10\"\n", err: []string{"c.toml:3: delay = \"10\": ", "bare number"}},
		{file: "c.toml", data: "rate = \"1bit\"\n", err: []string{"c.toml:1: rate = \"1bit\": ", "8kbit"}},
		{file: "c.json", data: "{\"rate\": \"5mbit\",\n \"aqm\": 3}", err: []string{"c.json:2: aqm = \"3\": "}},
		// A configuration file has no title: every key is a setting.
		{file: "c.toml", data: "title = \"mine\"\n", err: []string{"c.toml:1: title: no such setting"}},
		// A command flag the command has not (metrics), or that a file
		// may not set (verbose), is no key.
		{file: "c.toml", data: "metrics = \":9101\"\n", err: []string{"c.toml:1: metrics: no such setting"}},
		{file: "c.toml", data: "rate = \"5mbit\"\nverbose = true\n", err: []string{"c.toml:2: verbose: no such setting"}},
		{file: "c.toml", data: "rate = \"5mbit\"\n[up]\nrate = \"1mbit\"\n", err: []string{"c.toml:2: up: tables are not used here"}},
		{file: "c.toml", data: "rate = \"5mbit\"\nrate = \"6mbit\"\n", err: []string{"c.toml:2"}},
	} {
		c, err := ParseConfig(tc.file, []byte(tc.data), hasNameAndWeb)
		if tc.err != nil {
			for _, want := range tc.err {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%q: error %v, want one containing %q", tc.data, err, want)
				}
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.data, err)
			continue
		}
		if got, want := mustJSON(t, c.Settings), mustJSON(t, tc.want); got != want {
			t.Errorf("%q: settings %s, want %s", tc.data, got, want)
		}
		var flags []string
		for _, f := range c.Flags {
			flags = append(flags, f.Key+"="+f.Value)
		}
		if got := strings.Join(flags, " "); got != tc.flags {
			t.Errorf("%q: command flags %q, want %q", tc.data, got, tc.flags)
		}
	}
}

// A configuration file written from settings reads back as the same
// settings; with all, as settings that resolve to the same hop.
func TestConfigTOMLRoundTrip(t *testing.T) {
	for _, kv := range [][]string{
		nil,
		{"rate", "20mbit", "up-delay", "3ms", "delay", "10ms", "coupling", "3", "step-thresh", "3p", "classic-protection", "20%",
			"jitter", "2ms,normal", "ecn-fault", "bleach", "down-ecn-fault", "mangle,share=30%", "loss", "1%", "up-loss", "ge:p=1,r=30", "nqb", "true"},
		{"aqm", "codel", "ecn", "true", "ce-threshold", "1ms", "target", "4ms"},
		{"aqm", "pie", "alpha", "0.25", "bytemode", "true"},
		{"aqm", "fq_codel", "flows", "64", "memlimit", "64k", "ce-threshold", "1ms", "ce-threshold-selector", "0x01/0x01"},
		{"aqm", "fifo", "memlimit", "64k"},
		{"aqm", "docsis", "docsis-classic", "pi2", "rate", "50mbit"},
		{"aqm", "docsis"},
		{"max-rtt", "200ms", "target", "5ms"},
		{"limit", "100", "mtu", "9000", "seed", "7"},
		{"up-rate-trace", "builtin:lte-up", "down-rate", "unlimited", "aggregate", "4ms,6kb"},
	} {
		s := settingsOfFlags(t, kv...)
		name := strings.Join(kv, " ")
		given, err := ConfigTOML(s, false)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c, err := ParseConfig("c.toml", given, hasNameAndWeb)
		if err != nil || !sameJSON(t, c.Settings, s) {
			t.Errorf("%s: wrote\n%s\nwhich reads back as %s (%v)", name, given, mustJSON(t, c.Settings), err)
		}
		all, err := ConfigTOML(s, true)
		if err != nil {
			t.Fatalf("%s --all: %v", name, err)
		}
		c, err = ParseConfig("c.toml", all, hasNameAndWeb)
		if err != nil {
			t.Fatalf("%s --all wrote\n%s\nwhich does not read back: %v", name, all, err)
		}
		if msg := sameHop(t, s, c.Settings); msg != "" {
			t.Errorf("%s --all wrote\n%s\nwhich resolves otherwise: %s", name, all, msg)
		}
		if len(c.Settings.Warnings()) != len(s.Warnings()) {
			t.Errorf("%s --all: warnings %q, given %q", name, c.Settings.Warnings(), s.Warnings())
		}
		if !strings.Contains(string(all), "aqm = ") || !strings.Contains(string(all), "rate") || len(kv) > 0 && len(all) <= len(given) {
			t.Errorf("%s --all wrote no more than the settings given:\n%s", name, all)
		}
	}
}

// sameHop says how a and b resolve to different hops, "" if they do not.
func sameHop(t *testing.T, a, b Settings) string {
	ca, err := a.Resolve("t")
	if err != nil {
		t.Fatal(err)
	}
	cb, err := b.Resolve("t")
	if err != nil {
		return err.Error()
	}
	for _, d := range []struct {
		dir    string
		da, db hop.DirConfig
	}{{"up", ca.Up, cb.Up}, {"down", ca.Down, cb.Down}} {
		// A loss model compares by identity: each Resolve makes its own.
		if c := d.da.Changes(d.db) &^ hop.ChangeLoss; c != 0 {
			return d.dir + ": changes " + strings.TrimSpace(strings.ReplaceAll(jsonOf(t, c), "\"", ""))
		}
		if !reflect.DeepEqual(d.da.Queue, d.db.Queue) {
			return d.dir + ": queue " + jsonOf(t, d.da.Queue) + " against " + jsonOf(t, d.db.Queue)
		}
		if la, lb := jsonOf(t, d.da.Link.Loss), jsonOf(t, d.db.Link.Loss); la != lb {
			return d.dir + ": loss " + la + " against " + lb
		}
	}
	if ca.MTU != cb.MTU || ca.Seed != cb.Seed {
		return "MTU or seed"
	}
	return ""
}

func jsonOf(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ReadConfig reads the invoking user's own file and follows no link.
func TestReadConfigSafely(t *testing.T) {
	old := profileOwner
	profileOwner = func() (string, uint32, error) { return "", uint32(os.Getuid()), nil }
	t.Cleanup(func() { profileOwner = old })
	dir := t.TempDir()
	path := filepath.Join(dir, "c.toml")
	if err := os.WriteFile(path, []byte("rate = \"5mbit\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := ReadConfig(path, hasNameAndWeb); err != nil || c.Settings.Rate == nil || *c.Settings.Rate != 5e6 {
		t.Fatalf("ReadConfig: %+v, %v", c.Settings, err)
	}
	link := filepath.Join(dir, "link.toml")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadConfig(link, hasNameAndWeb); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("ReadConfig of a link: %v, want a refusal naming the link", err)
	}
	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, []byte(strings.Repeat("#\n", 40<<10)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadConfig(big, hasNameAndWeb); err == nil || !strings.Contains(err.Error(), "KiB") {
		t.Errorf("ReadConfig of an 80 KiB file: %v, want a refusal", err)
	}
	profileOwner = func() (string, uint32, error) { return "", uint32(os.Getuid()) + 1, nil }
	if _, err := ReadConfig(path, hasNameAndWeb); err == nil || !strings.Contains(err.Error(), "belongs to uid") {
		t.Errorf("ReadConfig of another user's file: %v, want a refusal", err)
	}
}

// The control socket answers a settings request with the settings in
// force: those given with each set laid over them.
func TestControlSettingsInForce(t *testing.T) {
	base := Settings{Rate: ptr(uint64(10e6)), Delay: ptr(5 * time.Millisecond)}
	cfg, err := base.Resolve("c")
	if err != nil {
		t.Fatal(err)
	}
	in := &instance{hop: runningHop(t, cfg), settings: base, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if _, err := in.set(Settings{Target: ptr(7 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "control.sock"))
	if err != nil {
		t.Fatal(err)
	}
	s := serveControl(ln, in, func(net.Conn) error { return nil }, nil, nil)
	defer s.Close()
	c, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, `{"op":"settings"}`+"\n")
	var resp Response
	if err := json.NewDecoder(c).Decode(&resp); err != nil || resp.Settings == nil {
		t.Fatalf("settings answer: %+v, %v", resp, err)
	}
	want := base.Merge(Settings{Target: ptr(7 * time.Millisecond)})
	if got := mustJSON(t, *resp.Settings); got != mustJSON(t, want) {
		t.Errorf("settings in force %s, want %s", got, mustJSON(t, want))
	}
}
