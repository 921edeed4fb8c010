//go:build !unix

package profile

import "errors"

// ReadUser reads no profiles where there are no file owners to check
// (see the Unix version).
func ReadUser(home string, uid uint32) ([]Profile, []error) { return nil, nil }

// ReadFile reads nothing where there are no file owners to check.
func ReadFile(path string, uid uint32) ([]byte, error) {
	return nil, errors.New("reading a configuration file needs a Unix system (its owner is checked)")
}
