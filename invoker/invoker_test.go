package invoker

import (
	"os"
	"strings"
	"testing"
)

func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		uid, gid string
		want     User
		err      string
	}{
		{uid: "65534", gid: "65534", want: User{UID: 65534, GID: 65534}},
		{uid: "4242", gid: "4343", want: User{UID: 4242, GID: 4343, Name: "4242", Home: "/"}},
		{uid: "x", gid: "1", err: `SUDO_UID "x": want a number`},
		{uid: "5", gid: "", err: "SUDO_UID 5 without SUDO_GID"},
	} {
		t.Setenv("SUDO_UID", tc.uid)
		t.Setenv("SUDO_GID", tc.gid)
		u, err := FromEnv()
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("SUDO_UID=%s SUDO_GID=%s: err %v, want %q", tc.uid, tc.gid, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("SUDO_UID=%s: %v", tc.uid, err)
		}
		if u.UID != tc.want.UID || u.GID != tc.want.GID || (tc.want.Name != "" && (u.Name != tc.want.Name || u.Home != tc.want.Home)) {
			t.Errorf("SUDO_UID=%s SUDO_GID=%s: %+v, want %+v", tc.uid, tc.gid, u, tc.want)
		}
	}
	t.Setenv("SUDO_UID", "")
	if u, err := FromEnv(); err != nil || u.UID != uint32(os.Getuid()) {
		t.Errorf("without sudo: %+v, %v; want uid %d", u, err, os.Getuid())
	}
}

func TestEnvIsClean(t *testing.T) {
	t.Setenv("SECRET_TOKEN", "x")
	t.Setenv("SUDO_COMMAND", "/bin/pi2hop")
	t.Setenv("TERM", "xterm")
	u := User{Name: "alice", Home: "/home/alice", Shell: "/bin/zsh"}
	env := strings.Join(u.Env("PI2HOP_NETNS=n"), "\n")
	for _, want := range []string{"HOME=/home/alice", "USER=alice", "LOGNAME=alice", "SHELL=/bin/zsh", "TERM=xterm", "PI2HOP_NETNS=n", "PATH=/usr/local/bin:"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %q:\n%s", want, env)
		}
	}
	for _, bad := range []string{"SECRET_TOKEN", "SUDO_COMMAND"} {
		if strings.Contains(env, bad) {
			t.Errorf("env passes %s:\n%s", bad, env)
		}
	}
}
