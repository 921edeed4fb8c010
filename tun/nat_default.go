//go:build !linux

package tun

import "net/netip"

func (j *Journal) AddMasqueradeOut(ns, name, oif string, srcs ...netip.Prefix) error {
	return ErrUnsupported
}

func NftTableExists(ns, name string) (bool, error) { return false, ErrUnsupported }
