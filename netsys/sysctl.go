package netsys

import "strings"

// sharedKey reports whether key is namespace-wide (shared) rather than a
// device's own: net/ipv4/conf/eth0/rp_filter belongs to eth0, which the
// instance made or does not share; conf/all and conf/default are shared.
func sharedKey(key string) bool {
	f := strings.Split(key, "/")
	if len(f) >= 4 && f[0] == "net" && f[2] == "conf" {
		return f[3] == "all" || f[3] == "default"
	}
	return true
}
