package instance

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/internal/roottest"
)

func TestParseStart(t *testing.T) {
	// proc(5): pid (comm) state ppid ... starttime is field 22. The
	// command name may hold spaces and parentheses.
	fields := func(comm string) string {
		f := []string{"4242", "(" + comm + ")", "S"}
		for i := 4; i <= 52; i++ {
			f = append(f, strings.Repeat("1", i%3+1))
		}
		f[21] = "987654321" // field 22
		return strings.Join(f, " ")
	}
	for _, comm := range []string{"pi2hop", "a b", "x) (y", ")"} {
		got, err := parseStart(fields(comm))
		if err != nil || got != 987654321 {
			t.Errorf("comm %q: %d, %v; want 987654321", comm, got, err)
		}
	}
	if _, err := parseStart("4242 (short) S 1 2"); err == nil {
		t.Error("a cut stat line parsed")
	}
}

// A PID that is alive but started at another time is a stale record; a
// PID alone (old state files) falls back to existence.
func TestStateAlive(t *testing.T) {
	self, err := ProcStart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start, err := ProcStart(pid)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	for _, tt := range []struct {
		st   State
		want bool
	}{
		{State{PID: os.Getpid(), Start: self}, true},
		{State{PID: os.Getpid(), Start: self + 1}, false}, // the PID was reused
		{State{PID: os.Getpid()}, true},
		{State{PID: pid, Start: start}, false}, // exited
		{State{PID: 0}, false},
	} {
		if got := tt.st.Alive(); got != tt.want {
			t.Errorf("%+v alive = %v, want %v", tt.st, got, tt.want)
		}
	}
}

func TestCleanupCommand(t *testing.T) {
	for cmd, want := range map[string]string{
		"run":   "pi2hop run --cleanup --name x",
		"shell": "pi2hop shell --cleanup --name x",
		"lab":   "pi2hop lab --cleanup --name x",
		"share": "pi2hop share --cleanup --name x",
		"":      "pi2hop run --cleanup --name x",
	} {
		if got := CleanupCommand(cmd, "x"); got != want {
			t.Errorf("CleanupCommand(%q) = %q, want %q", cmd, got, want)
		}
	}
}

// The state folder is used only when it is root's, 0700 and no link.
func TestCheckRunDir(t *testing.T) {
	roottest.Need(t) // to own folders as root and as another user
	base := t.TempDir()
	dir := filepath.Join(base, "run")
	if err := checkRunDir(dir); err != nil {
		t.Fatalf("a fresh folder: %v", err)
	}
	if fi, err := os.Lstat(dir); err != nil || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
		t.Fatalf("made %v, %v; want a 0700 folder", fi.Mode(), err)
	}
	if err := checkRunDir(dir); err != nil {
		t.Fatalf("the same folder again: %v", err)
	}
	os.Chmod(dir, 0o755)
	if err := checkRunDir(dir); err == nil || !strings.Contains(err.Error(), "mode 0755") {
		t.Errorf("mode 0755: %v", err)
	}
	os.Chmod(dir, 0o700)
	os.Chown(dir, 65534, 65534)
	if err := checkRunDir(dir); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Errorf("owned by nobody: %v", err)
	}
	link := filepath.Join(base, "link")
	target := filepath.Join(base, "target")
	os.Mkdir(target, 0o700)
	os.Symlink(target, link)
	if err := checkRunDir(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a link to a good folder: %v", err)
	}
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	if err := checkRunDir(file); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Errorf("a file: %v", err)
	}
}
