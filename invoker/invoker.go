// Package invoker acts for the user who invoked pi2hop: the one behind
// sudo, not root. pi2hop needs root for namespaces, devices and routes;
// the programs it runs for the user (pi2hop shell's command) and the files
// it writes for them (captures, reports, plots) do not, so they get that
// user's identity, as mahimahi's shells drop to the invoking user.
package invoker

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
)

// User is who files and commands belong to.
type User struct {
	UID, GID uint32
	Groups   []uint32 // supplementary groups
	Name     string
	Home     string
	Shell    string
}

// Root reports whether u is root (no identity to drop to).
func (u User) Root() bool { return u.UID == 0 }

func (u User) String() string { return fmt.Sprintf("%s (uid %d, gid %d)", u.Name, u.UID, u.GID) }

// FromEnv returns the invoking user: SUDO_UID and SUDO_GID when sudo set
// them, else the user the process runs as.
func FromEnv() (User, error) {
	uidS, gidS := os.Getenv("SUDO_UID"), os.Getenv("SUDO_GID")
	if uidS == "" {
		return byID(uint32(os.Getuid()), uint32(os.Getgid()))
	}
	uid, err := strconv.ParseUint(uidS, 10, 32)
	if err != nil {
		return User{}, fmt.Errorf("SUDO_UID %q: want a number", uidS)
	}
	gid := uint64(0)
	if gidS != "" {
		if gid, err = strconv.ParseUint(gidS, 10, 32); err != nil {
			return User{}, fmt.Errorf("SUDO_GID %q: want a number", gidS)
		}
	} else if uid != 0 {
		return User{}, fmt.Errorf("SUDO_UID %d without SUDO_GID", uid)
	}
	return byID(uint32(uid), uint32(gid))
}

// Lookup returns the user with that name or numeric uid (pi2hop shell
// --user), with the user's primary group.
func Lookup(name string) (User, error) {
	u, err := user.Lookup(name)
	if err != nil {
		if _, nerr := strconv.ParseUint(name, 10, 32); nerr == nil {
			u, err = user.LookupId(name)
		}
	}
	if err != nil {
		return User{}, fmt.Errorf("user %q: %w", name, err)
	}
	return fromOS(u, 0, false)
}

// byID fills in a user known by ids. A uid that has no passwd entry (a
// container's) still works: named by number, home /, no groups.
func byID(uid, gid uint32) (User, error) {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return User{UID: uid, GID: gid, Name: strconv.FormatUint(uint64(uid), 10), Home: "/", Shell: "/bin/sh"}, nil
	}
	return fromOS(u, gid, true)
}

func fromOS(u *user.User, gid uint32, gidGiven bool) (User, error) {
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return User{}, fmt.Errorf("user %q: uid %q is not a number", u.Username, u.Uid)
	}
	if !gidGiven {
		g, err := strconv.ParseUint(u.Gid, 10, 32)
		if err != nil {
			return User{}, fmt.Errorf("user %q: gid %q is not a number", u.Username, u.Gid)
		}
		gid = uint32(g)
	}
	out := User{UID: uint32(uid), GID: gid, Name: u.Username, Home: u.HomeDir, Shell: loginShell(u.Username)}
	if ids, err := u.GroupIds(); err == nil {
		for _, s := range ids {
			if g, err := strconv.ParseUint(s, 10, 32); err == nil {
				out.Groups = append(out.Groups, uint32(g))
			}
		}
	}
	return out, nil
}

// loginShell reads the user's shell from /etc/passwd (os/user does not
// expose it); /bin/sh when there is none.
func loginShell(name string) string {
	b, err := os.ReadFile("/etc/passwd")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Split(line, ":")
			if len(f) == 7 && f[0] == name && f[6] != "" {
				return f[6]
			}
		}
	}
	return "/bin/sh"
}

// safePath is the PATH a command runs with: the user's own from the
// environment would be the caller's, and sudo already reset it.
const safePath = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

// Env is a clean environment for a command run as u: HOME, USER,
// LOGNAME, SHELL and PATH of the user, the terminal and locale of the
// caller, then extra (KEY=VALUE) on top. Nothing else of root's
// environment passes (sudo's own SUDO_* included).
func (u User) Env(extra ...string) []string {
	env := []string{"HOME=" + u.Home, "USER=" + u.Name, "LOGNAME=" + u.Name, "SHELL=" + u.Shell, "PATH=" + safePath}
	for _, k := range []string{"TERM", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "COLORTERM", "DISPLAY", "WAYLAND_DISPLAY"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, extra...)
}
