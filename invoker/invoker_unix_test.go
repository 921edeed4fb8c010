//go:build unix

package invoker

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pi2hop/pi2hop/internal/roottest"
)

func TestCreateRefusesLinksAndExistingFiles(t *testing.T) {
	dir := t.TempDir()
	u, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "precious")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "cap.pcapng.1")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Create(link, ModeCapture); err == nil || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Create through a planted link: %v, want an error naming %s", err, link)
	}
	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(dir, "nowhere"), dangling)
	if _, err := u.Create(dangling, ModeCapture); err == nil {
		t.Errorf("Create through a dangling link succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "nowhere")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the dangling link's target was created")
	}
	if _, err := u.Create(target, ModeCapture); !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), target) {
		t.Errorf("Create over an existing file: %v, want ErrExists naming it", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("target changed to %q", b)
	}
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	p := filepath.Join(dir, "report.md")
	if err := u.WriteFile(p, []byte("r"), ModeReport); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != ModeReport {
		t.Errorf("mode %v under umask 077, want %v", fi.Mode().Perm(), ModeReport)
	}
}

// As root, files and commands belong to the invoking user.
func TestAsInvokingUser(t *testing.T) {
	roottest.Need(t) // to give files and processes to another user
	u := User{UID: 65534, GID: 65534, Name: "nobody", Home: "/", Shell: "/bin/sh"}
	dir := t.TempDir()
	p := filepath.Join(dir, "cap.pcapng")
	f, err := u.Create(p, ModeCapture)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	fi, _ := os.Stat(p)
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 65534 || st.Gid != 65534 || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: uid %d gid %d mode %v, want 65534 65534 0600", p, st.Uid, st.Gid, fi.Mode().Perm())
	}
	var out bytes.Buffer
	cmd := exec.Command("/bin/sh", "-c", "id -u; id -G; grep CapEff /proc/self/status")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.Credential()}
	cmd.Env = u.Env()
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(out.String())
	if len(lines) < 4 || lines[0] != "65534" || lines[1] != "65534" || lines[3] != "0000000000000000" {
		t.Errorf("child as nobody: %q, want uid 65534, groups 65534, no capabilities", out.String())
	}
}
