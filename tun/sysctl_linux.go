package tun

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// sysctlPath checks key ("net/ipv4/ip_forward") and returns its file.
func sysctlPath(key string) (string, error) {
	clean := filepath.Clean("/" + key)
	if key == "" || strings.Contains(key, "..") || clean != "/"+key {
		return "", fmt.Errorf("tun: sysctl %q: want a path under /proc/sys such as net/ipv4/ip_forward", key)
	}
	return "/proc/sys" + clean, nil
}

// ReadSysctl returns the value of key in namespace ns ("" = the host's),
// without the trailing newline. /proc/sys/net shows the namespace of the
// thread that opens it, so the file is opened inside ns.
func ReadSysctl(ns, key string) (string, error) {
	p, err := sysctlPath(key)
	if err != nil {
		return "", err
	}
	var v string
	err = Do(ns, func() error {
		b, err := os.ReadFile(p)
		v = strings.TrimRight(string(b), "\n")
		return err
	})
	if err != nil {
		return "", fmt.Errorf("tun: read sysctl %s: %w", key, err)
	}
	return v, nil
}

// WriteSysctl sets key to value in namespace ns ("" = the host's).
func WriteSysctl(ns, key, value string) error {
	p, err := sysctlPath(key)
	if err != nil {
		return err
	}
	err = Do(ns, func() error { return os.WriteFile(p, []byte(value), 0o644) })
	if err != nil {
		return fmt.Errorf("tun: write sysctl %s=%s: %w", key, value, err)
	}
	return nil
}
