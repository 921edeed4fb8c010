//go:build !linux

package netsys

import "fmt"

// ForwardAccept is a chain AcceptForward put accept rules into.
type ForwardAccept struct{ Table, Chain string }

func (f ForwardAccept) String() string { return fmt.Sprintf("chain %s of table %s", f.Chain, f.Table) }

func (j *Journal) AcceptForward(ns, tag string, pairs [][2]string) ([]ForwardAccept, error) {
	return nil, ErrUnsupported
}
