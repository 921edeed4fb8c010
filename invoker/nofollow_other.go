//go:build !unix

package invoker

// Windows has no O_NOFOLLOW: there Create relies on O_EXCL alone, which
// still refuses any name already present, a link included.
const oNoFollow = 0
