package main

import (
	"context"
	"errors"
	"io"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/instance/web"
	"github.com/pi2hop/pi2hop/internal/cli"
	"github.com/pi2hop/pi2hop/internal/flagvalue"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/pi2hop/pi2hop/tun"
	"github.com/spf13/pflag"
)

const defaultInstance = instance.DefaultName

// cpuLatencyUsage is the help of --cpu-latency (run, shell, lab).
const cpuLatencyUsage = "CPU wake-up `latency` asked of the idle states while the hop runs (PM QoS): 0 keeps idle CPUs polling, so a packet or timer wakes the hop in µs, not the 50-100 µs of a halted VM CPU; off saves power. A kernel without a cpuidle driver halts idle CPUs anyway (check --box says)"

// instanceFlags are the flags every long-running hop command has.
type instanceFlags struct {
	name    string
	metrics string
	webFlags
	verbose    bool
	logFormat  flagvalue.Choice
	cpuLatency flagvalue.CPULatency
	wakeProbe  bool
	tun        flagvalue.Choice
}

func addInstanceFlags(fs *pflag.FlagSet) *instanceFlags {
	f := &instanceFlags{tun: flagvalue.Choice{
		Val:     string(tun.BackendOffload),
		Choices: []string{string(tun.BackendOffload), string(tun.BackendPlain)},
		Aliases: map[string]string{"water": string(tun.BackendPlain)}, // the library's name, before plain
	}}
	fs.StringVar(&f.name, "name", defaultInstance, "instance `name`: tags devices, rules and files (/run/pi2hop/NAME.*); stats and set find the instance by it")
	fs.StringVar(&f.metrics, "metrics", "", "serve Prometheus /metrics on `ADDR` (host:port; a bare :port binds to loopback)")
	f.webFlags.add(fs)
	fs.BoolVarP(&f.verbose, "verbose", "v", false, "log debug messages (the full start-up record among them)")
	f.logFormat = flagvalue.Choice{Val: instance.LogText, Choices: instance.LogFormats}
	fs.Var(&f.logFormat, "log-format", "text: a few start-up lines a person reads, then key=value log lines; json: every line a JSON object, the start-up record with every field among them (under systemd the journal gets that record too)")
	fs.Var(&f.cpuLatency, "cpu-latency", cpuLatencyUsage)
	fs.BoolVar(&f.wakeProbe, "floor-probe", true, "measure the machine's own timing floor beside the hop (a SCHED_FIFO process per CPU that wakes every 1ms, ~5% of a core each on a VM); stats shows its worst wake-up next to the hop's")
	fs.Var(&f.tun, "tun", "TUN `backend`: offload (vnet header, TSO/USO: the endpoints' super-packets are split into segments for the AQM and coalesced back where no packet changes; plain if the kernel refuses, with the reason logged) or plain (no offload, one packet per system call)")
	return f
}

// givenFlags returns the flags set on fs as --name=value, for the
// capture's comment.
func givenFlags(fs *pflag.FlagSet) []string {
	var args []string
	fs.Visit(func(f *pflag.Flag) { args = append(args, "--"+f.Name+"="+f.Value.String()) })
	return args
}

// runInstance runs topo as the instance the flags describe: the link
// flags resolved, the capture, the control socket, the metrics.
func runInstance(ctx context.Context, env *cmdEnv, command string, inst *instanceFlags, link *linkFlags, cf *captureFlags, comment string, topo instance.Topology) error {
	if err := link.applyConfig(); err != nil {
		return usagef("%s: %v", command, err)
	}
	if err := instance.CheckName(inst.name); err != nil {
		return usagef("%s: --name: %v", command, err)
	}
	cfg, err := link.hopConfig(inst.name)
	if err != nil {
		return configError(command, err)
	}
	viewer, err := inst.viewer()
	if err != nil {
		return usagef("%s: %v", command, err)
	}
	attrs := []any{"capture", cf.path, "config", link.config}
	if link.profile.Val != "" {
		attrs = append(attrs, "profile", link.profile.Val)
	}
	cfg.CPULatency = inst.cpuLatency.D
	cfg.WakeProbe = inst.wakeProbe
	cfg.TUN = tun.Backend(inst.tun.Val)
	err = instance.Run(ctx, instance.Options{
		Name: inst.name, Command: command,
		Settings: link.settings(), Config: cfg,
		Metrics: inst.metrics, Web: viewer,
		Capture: func() (*pcap.Capture, error) { return openCapture(cf, comment) },
		Stderr:  env.stderr, Verbose: inst.verbose, LogFormat: inst.logFormat.Val,
		Attrs: attrs,
	}, topo)
	var ee *instance.ExitError
	if errors.As(err, &ee) {
		return &cli.ExitError{Code: ee.Code}
	}
	return err
}

// webFlags are --web and --web-token (run, shell, share, lab).
type webFlags struct{ web, webToken string }

func (f *webFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.web, "web", "", "serve the live browser view on `ADDR` (--web alone: "+web.DefaultAddr+"; --web=host:port otherwise; a bare :port binds to loopback); any address beyond loopback needs --web-token or gets a generated one, printed at start")
	fs.Lookup("web").NoOptDefVal = web.DefaultAddr
	fs.StringVar(&f.webToken, "web-token", "", "`token` every request to --web must carry (?token= or the X-Pi2hop-Token header); generated when --web is not on loopback and none is given")
}

// options checks --web and --web-token: nil without --web.
func (f *webFlags) options() (*web.Options, error) { return web.NewOptions(f.web, f.webToken) }

// viewer returns what starts the view of an instance (nil without --web).
func (f *webFlags) viewer() (func(instance.Live) (io.Closer, string, error), error) {
	opt, err := f.options()
	return web.Viewer(opt), err
}

// openCapture opens --capture for an instance (nil without one).
func openCapture(cf *captureFlags, comment string) (*pcap.Capture, error) {
	return cf.open(comment, hop.UnixOffset())
}

// cleanupUsage is the help of --cleanup: run, shell and lab each have it,
// and each removes what any dead instance of that name left.
const cleanupUsage = "remove what a killed instance of --name left (namespaces, devices, rules, routes, NAT table; shared sysctls restored unless another instance holds them), then exit"

// cleanupAs undoes what a dead instance left (ran --cleanup, its words
// for that command); ifaces are a gateway's LAN and WAN, whose rules it
// sweeps. cleanupInstance is it for no command in particular.
func cleanupAs(ran, name string, ifaces []string, stdout io.Writer) error {
	if err := instance.CheckName(name); err != nil {
		return usagef("--name: %v", err)
	}
	return instance.CleanupAs(ran, name, ifaces, stdout)
}

func cleanupInstance(name string, ifaces []string, out io.Writer) error {
	return cleanupAs("", name, ifaces, out)
}

// pickNameUsage is the --name flag's help of the commands that talk to a
// running instance.
const pickNameUsage = "instance `name` (as given to run, shell or share; default: the only one running, else " + defaultInstance + ")"

// pickInstance returns the instance a client command talks to: the one
// named, or with no name ("") the only one running (instance.Pick).
func pickInstance(name string) (string, error) {
	if name == "" {
		return instance.Pick(defaultInstance, false)
	}
	return instance.Pick(name, true)
}
