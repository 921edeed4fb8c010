package netsys

import "fmt"

// NSID names a network namespace by the device and inode of its nsfs file
// (/proc/PID/ns/net), which stay the same while it exists, and by its name
// under NetnsDir where it has one (ip netns add, ip netns exec). A state
// file keeps it so that a cleanup undoes in the namespace the changes
// were made in, and in no other.
type NSID struct {
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
	Name string `json:"name,omitempty"`
}

// Same reports whether id and o are one namespace (names aside: a
// namespace may have several, or none).
func (id NSID) Same(o NSID) bool { return id.Dev == o.Dev && id.Ino == o.Ino }

// String is the namespace as a person finds it: its name, if any, then
// its inode as `ip netns identify` and `lsns` show it (net:[INODE]).
func (id NSID) String() string {
	if id.Name != "" {
		return fmt.Sprintf("network namespace %q (net:[%d])", id.Name, id.Ino)
	}
	return fmt.Sprintf("network namespace net:[%d]", id.Ino)
}
