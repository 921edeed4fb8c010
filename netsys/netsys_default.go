//go:build !linux

package netsys

import (
	"context"
	"net/netip"
	"syscall"
	"time"
)

// Everything here needs Linux; these keep the package building elsewhere.

func NewNamespace(name string) error                                  { return ErrUnsupported }
func DeleteNamespace(name string) error                               { return ErrUnsupported }
func NamespaceExists(name string) bool                                { return false }
func Do(ns string, f func() error) error                              { return ErrUnsupported }
func SignalNS(name string, sig syscall.Signal) (int, error)           { return 0, ErrUnsupported }
func ReadSysctl(ns, key string) (string, error)                       { return "", ErrUnsupported }
func WriteSysctl(ns, key, value string) error                         { return ErrUnsupported }
func undo(e Entry) error                                              { return ErrUnsupported }
func (j *Journal) NewNamespace(name string) error                     { return ErrUnsupported }
func (j *Journal) AddLink(ns, name string, create func() error) error { return ErrUnsupported }
func (j *Journal) AddVeth(ns, name, peerNS, peer string) error        { return ErrUnsupported }
func (j *Journal) AddAddr(ns, dev string, p netip.Prefix) error       { return ErrUnsupported }
func (j *Journal) AddRoute(ns string, r Route) error                  { return ErrUnsupported }
func (j *Journal) AddRule(ns string, r Rule) error                    { return ErrUnsupported }
func (j *Journal) SetSysctl(ns, key, value string) error              { return ErrUnsupported }
func (j *Journal) BaseSysctl(ns, key string) (string, error)          { return "", ErrUnsupported }
func (j *Journal) AddMasquerade(ns, name string, srcs ...netip.Prefix) error {
	return ErrUnsupported
}
func LockDir(dir string) (unlock func(), err error)                     { return nil, ErrUnsupported }
func (j *Journal) ShareSysctls(dir, holder string, _ func(string) bool) {}
func ReleaseSysctls(dir, ns, holder string) error                       { return ErrUnsupported }

// MissingLinkError is a link that did not appear in time.
type MissingLinkError struct {
	Name   string
	Wait   time.Duration
	Prefix bool
}

func (e *MissingLinkError) Error() string { return "interface " + e.Name + " did not appear" }

func WaitLinks(ctx context.Context, names []string, d time.Duration) error { return ErrUnsupported }
func LinkIn(ctx context.Context, p netip.Prefix, d time.Duration) (string, error) {
	return "", ErrUnsupported
}

func CurrentNS() (NSID, error)                { return NSID{}, ErrUnsupported }
func FindNS(id NSID) (path string, ok bool)   { return "", false }
func RulePriorityUsed(prio int) (bool, error) { return false, ErrUnsupported }
