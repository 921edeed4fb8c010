package privs

import "os"

// Effective returns the process's effective capabilities; unknown (all
// allowed) when /proc is not there to say.
func Effective() Set {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return Set{}
	}
	s, err := ParseStatus(string(b))
	if err != nil {
		return Set{}
	}
	return s
}
