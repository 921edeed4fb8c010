//go:build unix

package profile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// userHome makes a home with the profile folder, owned by the test's user.
func userHome(t *testing.T) (home, dir string) {
	home = t.TempDir()
	dir = filepath.Join(home, UserDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return home, dir
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadUser(t *testing.T) {
	uid := uint32(os.Getuid())
	home, dir := userHome(t)
	write(t, filepath.Join(dir, "office.toml"), "rate = \"20mbit\"\n")
	write(t, filepath.Join(dir, "home.json"), "{\"delay\": \"5ms\"}")
	write(t, filepath.Join(dir, "notes.txt"), "not a profile")
	write(t, filepath.Join(dir, "big.toml"), "# "+strings.Repeat("x", MaxUserFile)+"\n")
	write(t, filepath.Join(dir, "twice.toml"), "")
	write(t, filepath.Join(dir, "twice.json"), "{}")
	secret := filepath.Join(t.TempDir(), "secret")
	write(t, secret, "rate = \"1mbit\"\n")
	if err := os.Symlink(secret, filepath.Join(dir, "link.toml")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.toml"), 0o644); err != nil {
		t.Fatal(err)
	}
	ps, errs := ReadUser(home, uid)
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	if strings.Join(names, " ") != "home office" {
		t.Errorf("profiles %v, want home office", names)
	}
	want := map[string]string{
		"big":   "over the 64 KiB a profile or configuration file may hold",
		"link":  "link.toml is a symbolic link: pi2hop does not follow links",
		"fifo":  "fifo.toml: not a regular file",
		"twice": "twice.json: profile twice is in twice.toml too; keep one of the two",
	}
	for _, err := range errs {
		var ue *UserError
		if !errors.As(err, &ue) {
			t.Errorf("error %v: not a UserError", err)
			continue
		}
		if w, ok := want[ue.Name]; !ok || !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %v, want it to say %q", ue.Name, err, w)
		}
		delete(want, ue.Name)
	}
	for name := range want {
		t.Errorf("no error for %s", name)
	}
	if ps, errs := ReadUser(t.TempDir(), uid); len(ps)+len(errs) != 0 {
		t.Errorf("home without the folder: %v %v, want nothing", ps, errs)
	}
}

// TestReadUserFolderLinkAndOwner: a folder on the way that is a link is
// not followed, and a file or folder that is not the user's is not read
// (as root, where a file can belong to another user).
func TestReadUserFolderLinkAndOwner(t *testing.T) {
	uid := uint32(os.Getuid())
	home := t.TempDir()
	elsewhere := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".config"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(home, ".config", "pi2hop")); err != nil {
		t.Fatal(err)
	}
	if _, errs := ReadUser(home, uid); len(errs) != 1 || !strings.Contains(errs[0].Error(), "pi2hop is a symbolic link") {
		t.Errorf("linked folder: %v, want it refused", errs)
	}
	home, dir := userHome(t)
	write(t, filepath.Join(dir, "office.toml"), "rate = \"20mbit\"\n")
	if _, errs := ReadUser(home, uid+1); len(errs) != 1 || !strings.Contains(errs[0].Error(), "belongs to uid") {
		t.Errorf("another user's folder: %v, want it refused", errs)
	}
	if os.Getuid() != 0 {
		return // only root can give a file away
	}
	if err := os.Chown(filepath.Join(dir, "office.toml"), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if ps, errs := ReadUser(home, uid); len(ps) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "office.toml belongs to uid 65534") {
		t.Errorf("a file of another user's: %v %v, want it refused", ps, errs)
	}
}
