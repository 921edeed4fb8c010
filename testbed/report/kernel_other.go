//go:build !unix

package report

// kernelRelease is "": these systems have no uname; the OS is in the
// report's platform already.
func kernelRelease() string { return "" }
