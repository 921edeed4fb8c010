package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/pi2hop/pi2hop/tun"
	"github.com/spf13/pflag"
)

// pi2hop shell: run a command in a fresh network namespace behind the
// bottleneck, like mahimahi's shells in one step. The namespace routes
// everything into its TUN; the hop forwards to a TUN in the host
// namespace, so the host reaches the namespace and, with --nat, the
// namespace reaches whatever the host reaches. The command's exit status
// is pi2hop's.

func init() {
	register(&command{
		name:  "shell",
		short: "run a command in a network namespace behind the bottleneck",
		usage: "shell [flags] [-- CMD ARGS...]  (default CMD: $SHELL)",
		flags: shellFlags,
	})
}

type shellArgs struct {
	nat     bool
	inst    *instanceFlags
	link    *linkFlags
	capture *captureFlags
}

func shellFlags(fs *pflag.FlagSet) func(context.Context, *cmdEnv, []string) error {
	a := &shellArgs{}
	fs.BoolVar(&a.nat, "nat", false, "give the namespace the host's onward connectivity (forwarding + nftables masquerade; needs nft)")
	a.inst = addInstanceFlags(fs)
	a.link = addLinkFlags(fs, true)
	a.capture = addCaptureFlags(fs)
	return func(ctx context.Context, env *cmdEnv, args []string) error {
		return runShell(ctx, env, a, givenFlags(fs), args)
	}
}

// shellSubnet picks 10.254.N.0/24 (and fd00:254:N::/64) with no address
// of the host in it, so several shells can run side by side.
func shellSubnet() (netip.Prefix, netip.Prefix, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return netip.Prefix{}, netip.Prefix{}, err
	}
	for n := 1; n < 255; n++ {
		p4 := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 254, byte(n), 0}), 24)
		p6 := netip.PrefixFrom(netip.AddrFrom16([16]byte{0: 0xfd, 2: 0x02, 3: 0x54, 5: byte(n)}), 64)
		free := true
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(ipn.IP); ok && (p4.Contains(ip.Unmap()) || p6.Contains(ip)) {
					free = false
				}
			}
		}
		if free {
			return p4, p6, nil
		}
	}
	return netip.Prefix{}, netip.Prefix{}, errors.New("shell: no free subnet in 10.254.0.0/16")
}

func runShell(ctx context.Context, env *cmdEnv, a *shellArgs, given, args []string) (err error) {
	if len(args) == 0 {
		sh := os.Getenv("SHELL")
		if sh == "" {
			sh = "/bin/sh"
		}
		args = []string{sh}
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		return fmt.Errorf("shell: %w", err)
	}
	cfg, err := a.link.hopConfig(a.inst.name)
	if err != nil {
		return usagef("shell: %v", err)
	}
	sub4, sub6, err := shellSubnet()
	if err != nil {
		return err
	}
	in, err := startInstance(a.inst, "shell", given, env.stderr)
	if err != nil {
		return err
	}
	cfg.Logger = in.log
	cfg.CPULatency = a.inst.cpuLatency.d
	var pair *hop.Pair
	var capt *pcap.Capture
	defer func() {
		stop := func() error {
			var err error
			if pair != nil {
				err = pair.Close()
			}
			if capt != nil { // after the hop: its taps have stopped
				err = errors.Join(err, capt.Close())
			}
			return err
		}
		if cerr := in.close(stop); err == nil {
			err = cerr
		}
	}()

	if capt, err = a.capture.open("pi2hop shell "+strings.Join(given, " "), hop.UnixOffset()); err != nil {
		return err
	}
	spec := hop.PairSpec{
		ClientNS:  a.inst.name + "-shell",
		ServerDev: a.inst.name + "-sh",
		Subnet4:   sub4,
		Subnet6:   sub6,
		Journal:   in.journal,
	}
	if capt != nil {
		spec.Tap = pcap.NewHopTap(capt, "")
	}
	pair, err = hop.NewPairWith(ctx, spec, cfg)
	if err != nil {
		return err
	}
	if a.nat {
		if err := shellNAT(in.journal, a.inst.name, sub4, sub6); err != nil {
			return err
		}
	}
	if err := in.serve(ctx, pair.Hop, a.inst.metrics); err != nil {
		return err
	}
	in.log.Info("pi2hop running: shell",
		"netns", pair.ClientNS, "addr", pair.ClientAddr, "addr6", pair.ClientAddr6,
		"host_dev", pair.ServerDev, "host_addr", pair.ServerAddr, "host_addr6", pair.ServerAddr6,
		"up", describeDir(cfg.Up), "down", describeDir(cfg.Down), "nat", a.nat, "capture", a.capture.path,
		"control", socketPath(a.inst.name), "metrics", a.inst.metrics, "cpu_latency", a.inst.cpuLatency.String(),
		"command", args)
	return runInNamespace(ctx, env, pair, path, args)
}

// shellNAT forwards the namespace's traffic onward with the host's address.
func shellNAT(j *tun.Journal, name string, sub4, sub6 netip.Prefix) error {
	for _, k := range []string{"net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding"} {
		if err := j.SetSysctl("", k, "1"); err != nil {
			return err
		}
	}
	return j.AddMasquerade("", "pi2hop-"+name, sub4, sub6)
}

// runInNamespace starts the command inside the client namespace (a child
// inherits the namespace of the thread that forks it), passes the standard
// streams through and returns its exit status as an exitError. When ctx
// ends first (SIGINT, SIGTERM) the command gets SIGTERM, then SIGKILL.
func runInNamespace(ctx context.Context, env *cmdEnv, p *hop.Pair, path string, args []string) error {
	cmd := &exec.Cmd{Path: path, Args: args, Stdin: env.stdin, Stdout: env.stdout, Stderr: env.stderr}
	cmd.Env = append(os.Environ(),
		"PI2HOP_NETNS="+p.ClientNS,
		"PI2HOP_HOST="+p.ServerAddr.String(), "PI2HOP_HOST6="+p.ServerAddr6.String(),
		"PI2HOP_ADDR="+p.ClientAddr.String(), "PI2HOP_ADDR6="+p.ClientAddr6.String())
	if err := p.InClient(cmd.Start); err != nil {
		return fmt.Errorf("shell: start %s: %w", path, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	exited := false
	select {
	case err = <-done:
		exited = true
	case <-p.Done():
	case <-ctx.Done():
	}
	if !exited {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err = <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			err = <-done
		}
		if herr := p.Err(); herr != nil && ctx.Err() == nil {
			return fmt.Errorf("shell: the hop stopped: %w", herr)
		}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		return &exitError{code: code}
	}
	return err
}
