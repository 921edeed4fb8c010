package invoker

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// LookPath finds file in the PATH of env, the environment the command
// runs with (not root's), as a shell would; a name with a slash is taken
// as is.
func LookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		return exec.LookPath(file)
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, file)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found in PATH %s", file, path)
}
