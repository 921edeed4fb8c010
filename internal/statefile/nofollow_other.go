//go:build !unix

package statefile

// Windows has no O_NOFOLLOW; pi2hop keeps no state files there (the
// instances that write them run on Linux).
const oNoFollow = 0
