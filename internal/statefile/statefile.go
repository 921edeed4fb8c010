// Package statefile writes the small JSON files pi2hop keeps under
// /run/pi2hop (journals, sysctl references, DHCP leases): whole or not at
// all, so a crash mid-write never leaves half a file for --cleanup or the
// next start to misread.
package statefile

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// WriteJSON writes v as indented JSON to path through a temporary file
// renamed over it, mode 0600, creating the directory (0700) if needed.
// The temporary file is opened without following a symlink.
func WriteJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|oNoFollow, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
