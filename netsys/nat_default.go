//go:build !linux

package netsys

import "net/netip"

func (j *Journal) AddMasqueradeOut(ns, name, oif string, srcs ...netip.Prefix) error {
	return ErrUnsupported
}
func (j *Journal) AddNAT(ns string, n NAT) error                 { return ErrUnsupported }
func NftTableExists(ns, name string) (bool, error)               { return false, ErrUnsupported }
func ClientBytes(ns, table string) (map[netip.Addr]Bytes, error) { return nil, ErrUnsupported }
