package instance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/invoker"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/topology"
)

// Shell runs a command in a fresh network namespace behind the
// bottleneck, like mahimahi's shells in one step (pi2hop shell). The
// namespace routes everything into its TUN; the hop forwards to a TUN in
// the host namespace, so the host reaches the namespace and, with NAT,
// the namespace reaches whatever the host reaches. The command's exit
// status is the instance's result (an *ExitError).
//
// The command runs as User: the user behind sudo, whom pi2hop acts for.
// Root privileges are pi2hop's, to build the namespace; the app under
// test gets none, so it can neither leave the namespace, nor bypass or
// re-shape the bottleneck (the control socket is root's), nor change the
// host's network.
type Shell struct {
	Args []string // the command and its arguments; Args[0] is looked up in the PATH it runs with
	// User runs the command with that user's uid, gid and groups, no
	// capabilities and a clean environment (invoker.User.Env); nil runs
	// it as root with pi2hop's environment (pi2hop shell --as-root).
	User           *invoker.User
	NAT            bool
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	pair           *topology.Pair
	path           string
}

// ExitError is the shell command's exit status when it is not 0 (128+N
// for a command killed by signal N).
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// shellLeftovers: the namespace and NAT table of a shell of that name
// outlive its process.
func shellLeftovers(name string) []netsys.Entry {
	return []netsys.Entry{
		{Kind: netsys.KindNetns, Name: shellNS(name)},
		{Kind: netsys.KindNftTable, Name: natTable(name)},
	}
}

func shellNS(name string) string  { return name + "-shell" }
func natTable(name string) string { return "pi2hop-" + name }

func (t *Shell) Kind() string { return "shell" }

func (t *Shell) Start(ctx context.Context, env *Env) (*hop.Hop, error) {
	if len(t.Args) == 0 {
		return nil, errors.New("shell: no command")
	}
	path, err := invoker.LookPath(t.Args[0], t.env(nil))
	if err != nil {
		return nil, fmt.Errorf("shell: %w", err)
	}
	t.path = path
	sub4, sub6, err := env.HostSubnet()
	if err != nil {
		return nil, fmt.Errorf("shell: %w", err)
	}
	spec := topology.PairSpec{
		ClientNS:  shellNS(env.Name),
		ServerDev: env.Name + "-sh",
		Subnet4:   sub4,
		Subnet6:   sub6,
		Journal:   env.Journal,
		Tap:       env.Tap(""),
	}
	if t.pair, err = topology.NewPairWith(ctx, spec, env.Config); err != nil {
		return nil, err
	}
	if t.NAT {
		if err := shellNAT(env.Journal, env.Name, sub4, sub6); err != nil {
			return nil, err
		}
	}
	return t.pair.Hop, nil
}

func (t *Shell) Attrs() []any {
	p := t.pair
	return []any{"netns", p.ClientNS, "addr", p.ClientAddr, "addr6", p.ClientAddr6,
		"host_dev", p.ServerDev, "host_addr", p.ServerAddr, "host_addr6", p.ServerAddr6,
		"nat", t.NAT, "command", t.Args, "user", t.who()}
}

// who is the command's user for the start-up line.
func (t *Shell) who() string {
	if t.User == nil {
		return "root (--as-root)"
	}
	return t.User.String()
}

// env is the command's environment: the user's clean one, or pi2hop's
// own as root, with extra on top.
func (t *Shell) env(extra []string) []string {
	if t.User == nil {
		return append(os.Environ(), extra...)
	}
	return t.User.Env(extra...)
}

func (t *Shell) Close() error {
	if t.pair == nil {
		return nil
	}
	return t.pair.Close()
}

// shellSubnets is how many subnets shells take turns in: 10.254.1.0/24
// to 10.254.254.0/24.
const shellSubnets = 254

// HostSubnet allocates this instance a subnet for a namespace whose other
// end is a device on the host (a shell's, lab app's with NAT): its own,
// from the shared space, 10.254.N.0/24 and fd00:254:N::/64.
func (e *Env) HostSubnet() (netip.Prefix, netip.Prefix, error) {
	n, err := e.Slot(SpaceSubnet, shellSubnets, subnetFree)
	if err != nil {
		return netip.Prefix{}, netip.Prefix{}, err
	}
	p4, p6 := shellSubnet(n)
	return p4, p6, nil
}

// shellSubnet is subnet n of a shell: 10.254.N.0/24 and fd00:254:N::/64.
func shellSubnet(n int) (netip.Prefix, netip.Prefix) {
	p4 := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 254, byte(n), 0}), 24)
	p6 := netip.PrefixFrom(netip.AddrFrom16([16]byte{0: 0xfd, 2: 0x02, 3: 0x54, 5: byte(n)}), 64)
	return p4, p6
}

// subnetFree reports whether no address of the host is in subnet n, so
// a shell's routes there would not take another's traffic.
func subnetFree(n int) (bool, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false, err
	}
	p4, p6 := shellSubnet(n)
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(ipn.IP); ok && (p4.Contains(ip.Unmap()) || p6.Contains(ip)) {
				return false, nil
			}
		}
	}
	return true, nil
}

// shellNAT forwards the namespace's traffic onward with the host's address.
func shellNAT(j *netsys.Journal, name string, sub4, sub6 netip.Prefix) error {
	for _, k := range []string{"net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding"} {
		if err := j.SetSysctl("", k, "1"); err != nil {
			return err
		}
	}
	return j.AddMasquerade("", natTable(name), sub4, sub6)
}

// ShellEnv are the variables the command of a shell finds its
// addresses in, in the order help lists them: the one list the command's
// environment, help and the start-up lines name.
var ShellEnv = []struct{ Name, What string }{
	{"PI2HOP_HOST", "this host's IPv4 address, as the command reaches it (e.g. 10.254.1.1)"},
	{"PI2HOP_HOST6", "this host's IPv6 address (e.g. fd00:254:1::1)"},
	{"PI2HOP_ADDR", "the namespace's own IPv4 address (e.g. 10.254.1.2)"},
	{"PI2HOP_ADDR6", "the namespace's own IPv6 address (e.g. fd00:254:1::2)"},
	{"PI2HOP_NETNS", "the namespace's name, for ip netns exec"},
}

// shellEnv is ShellEnv's assignments for the namespaces of p.
func shellEnv(p *topology.Pair) []string {
	val := map[string]string{
		"PI2HOP_HOST": p.ServerAddr.String(), "PI2HOP_HOST6": p.ServerAddr6.String(),
		"PI2HOP_ADDR": p.ClientAddr.String(), "PI2HOP_ADDR6": p.ClientAddr6.String(),
		"PI2HOP_NETNS": p.ClientNS,
	}
	env := make([]string, len(ShellEnv))
	for i, v := range ShellEnv {
		env[i] = v.Name + "=" + val[v.Name]
	}
	return env
}

// ShellHelp is the paragraph of `pi2hop help shell` that says how the
// command finds its addresses.
func ShellHelp() string {
	var b strings.Builder
	b.WriteString("The command's environment names this run's addresses:\n")
	for _, v := range ShellEnv {
		fmt.Fprintf(&b, "  %-13s %s\n", v.Name, v.What)
	}
	b.WriteString(`The shell you type in expands $PI2HOP_HOST before pi2hop runs, where it is
not set yet: hand the command to a shell inside, in single quotes:
  pi2hop shell -- sh -c 'ping -c 5 $PI2HOP_HOST'
pi2hop substitutes no placeholders such as {host} in the command: its
arguments reach it as given (find -exec, JSON and awk use braces of their
own), and sh -c says the same in the shell's own syntax.`)
	return b.String()
}

// endLeftovers ends the processes the command left in namespace ns: a
// child it forked (sh -c's) outlives the signals sent to the command
// alone, and the command cannot have a process group of its own (an
// interactive one must stay in the terminal's foreground group). They get
// SIGTERM, a second to end, then SIGKILL: none outlives the shell, in a
// namespace about to lose its devices.
func endLeftovers(ns string) {
	if n, _ := netsys.SignalNS(ns, syscall.SIGTERM); n == 0 {
		return
	}
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if n, _ := netsys.SignalNS(ns, 0); n == 0 {
			return
		}
	}
	netsys.SignalNS(ns, syscall.SIGKILL)
}

// Wait starts the command inside the client namespace (a child inherits
// the namespace of the thread that forks it), passes the standard streams
// through and returns its exit status as an *ExitError. When ctx ends
// first (SIGINT, SIGTERM) or the hop stops, the command gets SIGTERM,
// then SIGKILL.
func (t *Shell) Wait(ctx context.Context) error {
	p := t.pair
	cmd := &exec.Cmd{Path: t.path, Args: t.Args, Stdin: t.Stdin, Stdout: t.Stdout, Stderr: t.Stderr}
	cmd.Env = t.env(shellEnv(p))
	cmd.SysProcAttr = invoker.ChildAttr(t.User)
	// Streams that are no files are copied through pipes, which a child
	// the command left holds open: Wait stops waiting for them this long
	// after the command ended, and endLeftovers then ends the child.
	cmd.WaitDelay = 2 * time.Second
	if err := p.InClient(cmd.Start); err != nil {
		return fmt.Errorf("shell: start %s: %w", t.path, err)
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
	}
	endLeftovers(p.ClientNS)
	if !exited {
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
		return &ExitError{Code: code}
	}
	return err
}
