package tun

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"regexp"
	"strings"
)

var nftNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,31}$`)

// AddMasquerade creates nftables table name (family inet) in namespace ns
// with one postrouting chain that masquerades packets from the given
// source prefixes, so that a namespace behind the hop reaches the
// network with the host's address.
//
// Neither go.mod nor the standard library has an nftables client, so this
// runs the nft(8) program; it fails with a clear error if nft is missing.
func (j *Journal) AddMasquerade(ns, name string, srcs ...netip.Prefix) error {
	if !nftNameRE.MatchString(name) {
		return fmt.Errorf("tun: nftables table name %q: want a letter, then letters, digits, '_' or '-'", name)
	}
	nft, err := exec.LookPath("nft")
	if err != nil {
		return errors.New("tun: masquerading needs the nft program (Debian: apt install nftables)")
	}
	var rules strings.Builder
	for _, p := range srcs {
		fam := "ip"
		if p.Addr().Is6() {
			fam = "ip6"
		}
		fmt.Fprintf(&rules, "    %s saddr %s masquerade\n", fam, p.Masked())
	}
	script := fmt.Sprintf("table inet %s {\n  chain postrouting {\n    type nat hook postrouting priority srcnat; policy accept;\n%s  }\n}\n", name, rules.String())
	forget, err := j.record(Entry{Kind: KindNftTable, NS: ns, Name: name})
	if err != nil {
		return err
	}
	if err := runNft(ns, nft, script, "-f", "-"); err != nil {
		forget()
		return err
	}
	return nil
}

// runNft runs nft with args inside ns, script on its standard input.
func runNft(ns, nft, script string, args ...string) error {
	return Do(ns, func() error {
		cmd := exec.Command(nft, args...)
		cmd.Stdin = strings.NewReader(script)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("tun: nft %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
		}
		return nil
	})
}

// undoNftTable deletes the table; one that is not there is not an error.
func undoNftTable(e Entry) error {
	nft, err := exec.LookPath("nft")
	if err != nil {
		return nil // without nft there can be no table of ours
	}
	err = runNft(e.NS, nft, "", "delete", "table", "inet", e.Name)
	if err != nil && strings.Contains(err.Error(), "No such file or directory") {
		return nil
	}
	return err
}
