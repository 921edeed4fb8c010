package flowcli

import (
	"errors"
	"net"
	"net/netip"
	"time"

	"github.com/spf13/pflag"

	"github.com/pi2hop/pi2hop/flow"
	"github.com/pi2hop/pi2hop/internal/clidoc"
	"github.com/pi2hop/pi2hop/internal/flagvalue"
)

// args are the flags the subcommands share; each declares the ones it uses.
type args struct {
	to, listen, bind string
	ecn              string
	rfc8888          bool // block feedback (type 18) instead of an ACK per packet
	noValidation     bool // senders: no ECN validation
	duration         flagvalue.Duration
	every            flagvalue.Duration // interval reports
	json             bool
	label            string
}

func (a *args) peerFlags(fs *pflag.FlagSet) {
	fs.StringVar(&a.to, "to", "", "receiver `ADDR:PORT` (host names resolve)")
	fs.StringVar(&a.bind, "bind", "", "local `ADDR:PORT` to send from (default: any, on the peer's address family)")
}

func (a *args) listenFlag(fs *pflag.FlagSet) {
	fs.StringVar(&a.listen, "listen", "", "local `ADDR:PORT` to receive on, e.g. :8080 or [::]:8080")
}

// noValidationFlag declares the senders' --no-ecn-validation.
func (a *args) noValidationFlag(fs *pflag.FlagSet) {
	fs.BoolVar(&a.noValidation, "no-ecn-validation", false, "keep sending ECT(1) whatever the path does to it (a naive app); by default the sender checks the receiver's ECN counts and falls back to Not-ECT on a path that bleaches, re-marks, mangles or drops ECN")
}

func (a *args) ecnFlag(fs *pflag.FlagSet) {
	fs.StringVar(&a.ecn, "ecn", flow.ECNL4S, "`mode`: l4s (ECT(1), Prague response) or classic (Not-ECT, loss-only); must match on both ends")
	fs.BoolVar(&a.rfc8888, "rfc8888", false, "feedback in RFC 8888-style blocks every 25 ms (udp_prague's --rfc8888, type 18) instead of an ACK per packet; must match on both ends")
}

// outputFlags declares --duration, --json, --label and, when the
// subcommand's report period can be set, --every: how often an interval
// report is printed (--interval before this release). bulk and probe
// report once a second whatever is asked (probe's --every is its probe
// period); their --interval was always ignored and still is, with a note.
func (a *args) outputFlags(fs *pflag.FlagSet, defDuration time.Duration, what string, settable bool) {
	a.duration = flagvalue.Duration{D: defDuration, Min: 0}
	a.every = flagvalue.Duration{D: time.Second, Min: time.Millisecond}
	fs.Var(&a.duration, "duration", "how long to "+what+"; 0 = until interrupted")
	if settable {
		fs.Var(&a.every, "every", "print an interval report once per `period`")
		clidoc.Alias(fs, "interval", "every")
	} else {
		fs.Var(&a.every, "interval", "ignored")
		if err := fs.MarkDeprecated("interval", "ignored: this subcommand reports every second"); err != nil {
			panic(err)
		}
	}
	clidoc.JSONFlag(fs, &a.json, "print JSON lines (one per interval, then a summary) instead of text")
	fs.StringVar(&a.label, "label", "", "`name` put in every report line")
}

// inputError makes the endpoint library's word on a bad address or mode a
// usage error naming the flag.
func inputError(err error) error {
	var ie *flow.InputError
	if errors.As(err, &ie) {
		return usagef("--%v", ie)
	}
	return err
}

func (a *args) checkECN() error { return inputError(flow.CheckECN(a.ecn)) }

func (a *args) dialUDP() (*net.UDPConn, netip.AddrPort, error) {
	c, peer, err := flow.DialUDP(a.to, a.bind)
	return c, peer, inputError(err)
}

func (a *args) listenUDP() (*net.UDPConn, error) {
	c, err := flow.ListenUDP(a.listen)
	return c, inputError(err)
}

// openReceiver checks --ecn, opens the --listen socket and the output: what
// every receiving subcommand starts with.
func (a *args) openReceiver(env Env) (*net.UDPConn, *flow.Reporter, error) {
	if err := a.checkECN(); err != nil {
		return nil, nil, err
	}
	conn, err := a.listenUDP()
	if err != nil {
		return nil, nil, err
	}
	return conn, a.reporter(env), nil
}

func (a *args) reporter(env Env) *flow.Reporter {
	return flow.NewReporter(env.Stdout, a.json, a.label)
}

// oneEnd checks that exactly one of --listen (server) and --to (client)
// was given.
func (a *args) oneEnd() error {
	if (a.to == "") == (a.listen == "") {
		return usagef("give exactly one of --listen (server) and --to (client)")
	}
	return nil
}
