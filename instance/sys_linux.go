package instance

import (
	"io/fs"
	"syscall"
)

// fileOwner is the uid that owns fi's file.
func fileOwner(fi fs.FileInfo) (uid uint32, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}
