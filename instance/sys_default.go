//go:build !linux

package instance

import "io/fs"

// Instances run on Linux only (their shells, state folders and journals
// are Linux's); this keeps the package building elsewhere.

func fileOwner(fs.FileInfo) (uint32, bool) { return 0, false }
