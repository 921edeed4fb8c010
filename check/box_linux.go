package check

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/pi2hop/pi2hop/internal/wakeprobe"
	"github.com/pi2hop/pi2hop/netsys"
)

// Box checks this box as a bottleneck: what stops it forwarding, what
// makes another element the bottleneck, and what blurs its timing. Each
// finding that is a problem carries its fix.
func Box(ctx context.Context, o BoxOptions) ([]Finding, error) {
	var fs []Finding
	fs = append(fs, forwarding(o)...)
	fw, err := firewall(o)
	if err != nil {
		return nil, err
	}
	fs = append(fs, fw...)
	fs = append(fs, offloads(o)...)
	fs = append(fs, shaper(o)...)
	fs = append(fs, conntrack(o))
	fs = append(fs, governor())
	fs = append(fs, cpuIdle("/sys/devices/system/cpu/cpuidle/current_driver", "/proc/cmdline"))
	if o.WakeFor > 0 {
		fs = append(fs, wakeLatency(ctx, o.WakeFor))
	}
	return fs, nil
}

func forwarding(o BoxOptions) []Finding {
	var fs []Finding
	var off []string
	for _, k := range []struct{ key, name string }{
		{"net/ipv4/ip_forward", "net.ipv4.ip_forward"},
		{"net/ipv6/conf/all/forwarding", "net.ipv6.conf.all.forwarding"},
	} {
		if v, err := netsys.ReadSysctl(o.NS, k.key); err == nil && v != "1" {
			off = append(off, k.name)
		}
	}
	f := Finding{Check: "forwarding", Status: OK, Detail: "IPv4 and IPv6 forwarding on"}
	if len(off) > 0 {
		f = Finding{Check: "forwarding", Status: Note,
			Detail: strings.Join(off, " and ") + " off: run and share turn forwarding on while they run",
			Fix:    "sysctl -w " + strings.Join(off, "=1 ") + "=1 (only for forwarding without pi2hop)"}
	}
	fs = append(fs, f)
	// The effective reverse-path filter of a device is the larger of
	// "all" and its own (Documentation/networking/ip-sysctl.rst).
	strict := []string{}
	all, _ := netsys.ReadSysctl(o.NS, "net/ipv4/conf/all/rp_filter")
	for _, d := range []string{o.LAN, o.WAN} {
		if d == "" {
			continue
		}
		v, _ := netsys.ReadSysctl(o.NS, "net/ipv4/conf/"+d+"/rp_filter")
		if v == "1" || (all == "1" && v != "2") {
			strict = append(strict, d)
		}
	}
	if o.LAN == "" && o.WAN == "" && all == "1" {
		strict = append(strict, "all")
	}
	f = Finding{Check: "rp_filter", Status: OK, Detail: "no strict reverse-path filter"}
	if len(strict) > 0 {
		f = Finding{Check: "rp_filter", Status: Note,
			Detail: "strict reverse-path filter on " + strings.Join(strict, ", ") + ": run loosens it while it runs; a route asymmetric to it drops packets",
			Fix:    "sysctl -w net.ipv4.conf.all.rp_filter=2"}
	}
	return append(fs, f)
}

// firewall finds the base chains on the forward hook that drop by policy.
// In nftables a packet must pass every base chain of its hook: a drop in
// one is final, and an accept in another table does not override it, so
// the fix is a rule in the dropping chain itself (or where the tool that
// owns it expects one).
func firewall(o BoxOptions) ([]Finding, error) {
	var chains []*nftables.Chain
	var legacy bool
	err := netsys.Do(o.NS, func() error {
		c, err := nftables.New()
		if err != nil {
			return err
		}
		chains, err = c.ListChains()
		if b, err := os.ReadFile("/proc/net/ip_tables_names"); err == nil && strings.Contains(string(b), "filter") {
			legacy = true
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reading the nftables ruleset: %w", err)
	}
	lan, wan := iface(o.LAN, "LAN"), iface(o.WAN, "WAN")
	has := func(t *nftables.Table, name string) bool {
		for _, c := range chains {
			if c.Table.Name == t.Name && c.Table.Family == t.Family && c.Name == name {
				return true
			}
		}
		return false
	}
	hasPrefix := func(t *nftables.Table, prefix string) bool {
		for _, c := range chains {
			if c.Table.Name == t.Name && c.Table.Family == t.Family && strings.HasPrefix(c.Name, prefix) {
				return true
			}
		}
		return false
	}
	var fs []Finding
	for _, c := range chains {
		if c.Hooknum == nil || *c.Hooknum != *nftables.ChainHookForward || c.Policy == nil || *c.Policy != nftables.ChainPolicyDrop {
			continue
		}
		fam := netsys.FamilyName(c.Table.Family)
		where := fmt.Sprintf("the %s %s table's %s chain drops forwarded packets by policy", fam, c.Table.Name, c.Name)
		ipt := "iptables"
		if c.Table.Family == nftables.TableFamilyIPv6 {
			ipt = "ip6tables"
		}
		f := Finding{Check: "firewall", Status: Problem}
		switch {
		case has(c.Table, "DOCKER-USER"):
			f.Detail = where + " (Docker's): nothing is forwarded between " + lan + " and " + wan
			f.Fix = fmt.Sprintf("%[1]s -I DOCKER-USER -i %[2]s -o %[3]s -j ACCEPT; %[1]s -I DOCKER-USER -i %[3]s -o %[2]s -j ACCEPT", ipt, lan, wan)
		case hasPrefix(c.Table, "ufw"):
			f.Detail = where + " (ufw's default for routed traffic)"
			f.Fix = fmt.Sprintf("ufw route allow in on %[1]s out on %[2]s; ufw route allow in on %[2]s out on %[1]s", lan, wan)
		case c.Table.Name == "filter" && c.Name == "FORWARD" && c.Table.Family != nftables.TableFamilyINet:
			f.Detail = where + " (iptables)"
			f.Fix = fmt.Sprintf("%[1]s -I FORWARD -i %[2]s -o %[3]s -j ACCEPT; %[1]s -I FORWARD -i %[3]s -o %[2]s -j ACCEPT", ipt, lan, wan)
		default:
			f.Detail = where
			f.Fix = fmt.Sprintf("nft insert rule %[1]s %[2]s %[3]s iifname %[4]s oifname %[5]s accept; nft insert rule %[1]s %[2]s %[3]s iifname %[5]s oifname %[4]s accept", fam, c.Table.Name, c.Name, lan, wan)
		}
		fs = append(fs, f)
	}
	for _, c := range chains {
		if c.Table.Name == "firewalld" && c.Table.Family == nftables.TableFamilyINet && c.Name == "filter_FORWARD" {
			fs = append(fs, Finding{Check: "firewall", Status: Note,
				Detail: "firewalld runs: it rejects forwarding between zones that no policy allows",
				Fix:    fmt.Sprintf("firewall-cmd --zone=trusted --change-interface=%s; firewall-cmd --zone=trusted --change-interface=%s", lan, wan)})
			break
		}
	}
	if legacy {
		fs = append(fs, Finding{Check: "firewall", Status: Note,
			Detail: "legacy iptables tables are loaded, which nftables does not show: see iptables-legacy -S FORWARD"})
	}
	if len(fs) == 0 {
		fs = append(fs, Finding{Check: "firewall", Status: OK, Detail: "no forward chain drops by policy"})
	}
	return fs, nil
}

// ethtoolValue is struct ethtool_value, and ifreqData struct ifreq with
// its data pointer (linux/if.h): the ioctl ethtool -k makes.
type ethtoolValue struct{ cmd, data uint32 }

type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// ethtoolGet reads one offload setting of dev.
func ethtoolGet(fd int, dev string, cmd uint32) (uint32, error) {
	v := ethtoolValue{cmd: cmd}
	var ifr ifreqData
	copy(ifr.name[:unix.IFNAMSIZ-1], dev)
	ifr.data = unsafe.Pointer(&v)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(&v)
	if errno != 0 {
		return 0, errno
	}
	return v.data, nil
}

// ethFlagLRO is ETH_FLAG_LRO of ETHTOOL_GFLAGS.
const ethFlagLRO = 1 << 15

// offloads reports receive offloads on the interfaces: GRO and LRO merge
// a burst of packets from the NIC into one super-packet before the hop
// sees them, so the queue meets bursts the modelled link would not have.
func offloads(o BoxOptions) []Finding {
	if o.LAN == "" && o.WAN == "" {
		return []Finding{{Check: "offloads", Status: Note, Detail: "give --lan and --wan to check their receive offloads"}}
	}
	var fs []Finding
	for _, dev := range []string{o.LAN, o.WAN} {
		if dev == "" {
			continue
		}
		on := map[string]bool{}
		err := netsys.Do(o.NS, func() error {
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			for _, q := range []struct {
				name string
				cmd  uint32
				bit  uint32
			}{{"gro", unix.ETHTOOL_GGRO, 1}, {"lro", unix.ETHTOOL_GFLAGS, ethFlagLRO}, {"tso", unix.ETHTOOL_GTSO, 1}, {"gso", unix.ETHTOOL_GGSO, 1}} {
				v, err := ethtoolGet(fd, dev, q.cmd)
				if err != nil {
					if errors.Is(err, unix.ENODEV) {
						return fmt.Errorf("no interface %q", dev)
					}
					continue // not supported: off
				}
				on[q.name] = v&q.bit != 0
			}
			return nil
		})
		switch {
		case err != nil:
			fs = append(fs, Finding{Check: "offloads", Status: Problem, Detail: fmt.Sprintf("%s: %v", dev, err)})
		case on["gro"] || on["lro"]:
			var what []string
			for _, k := range []string{"gro", "lro"} {
				if on[k] {
					what = append(what, k)
				}
			}
			fs = append(fs, Finding{Check: "offloads", Status: Problem,
				Detail: fmt.Sprintf("%s: %s on: the NIC hands the hop bursts merged into super-packets", dev, strings.Join(what, " and ")),
				Fix:    fmt.Sprintf("ethtool -K %s gro off lro off", dev)})
		default:
			fs = append(fs, Finding{Check: "offloads", Status: OK, Detail: dev + ": no receive offload (gro, lro off)"})
		}
	}
	return fs
}

// shapers are the qdiscs that can limit a device's rate.
var shapers = map[string]bool{"tbf": true, "htb": true, "hfsc": true, "cake": true, "cbq": true, "netem": true, "dualpi2": true}

// shaper reports a qdisc on the WAN that limits its rate: below
// pi2hop's rate it is the bottleneck, and the hop's queue never builds.
func shaper(o BoxOptions) []Finding {
	if o.WAN == "" {
		return []Finding{{Check: "wan qdisc", Status: Note, Detail: "give --wan to check for another shaper on it"}}
	}
	var qs []netlink.Qdisc
	err := netsys.Do(o.NS, func() error {
		l, err := netlink.LinkByName(o.WAN)
		if err != nil {
			return err
		}
		qs, err = netlink.QdiscList(l)
		return err
	})
	if err != nil {
		return []Finding{{Check: "wan qdisc", Status: Problem, Detail: fmt.Sprintf("%s: %v", o.WAN, err)}}
	}
	var fs []Finding
	for _, q := range qs {
		kind := q.Type()
		if !shapers[kind] {
			continue
		}
		rate := uint64(0)
		if t, ok := q.(*netlink.Tbf); ok {
			rate = t.Rate * 8
		}
		f := Finding{Check: "wan qdisc", Status: Problem, Fix: fmt.Sprintf("tc qdisc del dev %s root", o.WAN)}
		switch {
		case rate > 0 && o.Rate > 0 && rate >= o.Rate:
			f.Status, f.Fix = Note, ""
			f.Detail = fmt.Sprintf("%s: %s at %s, faster than pi2hop's %s", o.WAN, kind, bitRate(rate), bitRate(o.Rate))
		case rate > 0 && o.Rate > 0:
			f.Detail = fmt.Sprintf("%s: %s at %s, slower than pi2hop's %s: it is the bottleneck, not pi2hop", o.WAN, kind, bitRate(rate), bitRate(o.Rate))
		case rate > 0:
			f.Detail = fmt.Sprintf("%s: %s at %s: pi2hop is the bottleneck only below that rate", o.WAN, kind, bitRate(rate))
		default:
			f.Detail = fmt.Sprintf("%s: a %s qdisc, which may shape: pi2hop is the bottleneck only below its rate", o.WAN, kind)
		}
		fs = append(fs, f)
	}
	if len(fs) == 0 {
		fs = append(fs, Finding{Check: "wan qdisc", Status: OK, Detail: o.WAN + ": no shaping qdisc"})
	}
	return fs
}

// bitRate writes a rate in tc's units.
func bitRate(bps uint64) string {
	switch {
	case bps >= 1e9 && bps%1e6 == 0:
		return fmt.Sprintf("%gGbit", float64(bps)/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%gMbit", float64(bps)/1e6)
	case bps >= 1e3:
		return fmt.Sprintf("%gKbit", float64(bps)/1e3)
	}
	return fmt.Sprintf("%dbit", bps)
}

// conntrack reports a connection-tracking table near full: new flows are
// then dropped (NAT in share needs an entry per flow).
func conntrack(o BoxOptions) Finding {
	cnt, err1 := netsys.ReadSysctl(o.NS, "net/netfilter/nf_conntrack_count")
	mx, err2 := netsys.ReadSysctl(o.NS, "net/netfilter/nf_conntrack_max")
	n, err3 := strconv.Atoi(cnt)
	m, err4 := strconv.Atoi(mx)
	if err := errors.Join(err1, err2, err3, err4); err != nil || m <= 0 {
		return Finding{Check: "conntrack", Status: OK, Detail: "connection tracking not loaded"}
	}
	f := Finding{Check: "conntrack", Status: OK, Detail: fmt.Sprintf("%d of %d entries used", n, m)}
	if n*5 >= m*4 {
		f.Status = Problem
		f.Detail += ": new flows are dropped when it fills"
		f.Fix = fmt.Sprintf("sysctl -w net.netfilter.nf_conntrack_max=%d", 2*m)
	}
	return f
}

// governor reports CPUs whose clock follows the load: a wake-up on a
// slowed CPU takes longer, and the hop's timing varies as the clock
// ramps.
func governor() Finding {
	paths, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor")
	if len(paths) == 0 {
		return Finding{Check: "cpu frequency", Status: OK, Detail: "no frequency scaling exposed (fixed clock or a VM)"}
	}
	byGov := map[string]int{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err == nil {
			byGov[strings.TrimSpace(string(b))]++
		}
	}
	var other []string
	for g, n := range byGov {
		if g != "performance" {
			other = append(other, fmt.Sprintf("%s on %d CPU(s)", g, n))
		}
	}
	sort.Strings(other)
	if len(other) == 0 {
		return Finding{Check: "cpu frequency", Status: OK, Detail: "governor performance on every CPU"}
	}
	return Finding{Check: "cpu frequency", Status: Note,
		Detail: "governor " + strings.Join(other, ", ") + ": the clock ramps with load, and wake-ups take longer while it is low",
		Fix:    "cpupower frequency-set -g performance"}
}

// cpuIdle reports whether idle CPUs can be kept awake. A hop asks PM QoS
// for wake-ups within --cpu-latency (/dev/cpu_dma_latency), and the
// kernel keeps that promise by choosing among a cpuidle driver's states:
// with no driver (current_driver "none", or no cpuidle at all, as on many
// VMs) it halts an idle CPU whatever is asked, and on a VM each wake-up of
// a halted CPU, for a packet or a timer, waits for the host. Booting with
// idle=poll makes idle CPUs spin instead. driver and cmdline are the
// files read (sysfs's current_driver, /proc/cmdline).
func cpuIdle(driver, cmdline string) Finding {
	if b, err := os.ReadFile(cmdline); err == nil && slices.Contains(strings.Fields(string(b)), "idle=poll") {
		return Finding{Check: "cpu idle", Status: OK, Detail: "idle=poll: idle CPUs spin, and wake at once"}
	}
	d := "none"
	if b, err := os.ReadFile(driver); err == nil {
		d = strings.TrimSpace(string(b))
	}
	if d != "none" && d != "" {
		return Finding{Check: "cpu idle", Status: OK, Detail: "cpuidle driver " + d + ": the hop's PM QoS request keeps idle CPUs in shallow states"}
	}
	return Finding{Check: "cpu idle", Status: Note,
		Detail: "no cpuidle driver: idle CPUs halt whatever PM QoS asks, so --cpu-latency cannot keep them awake; on a VM every wake-up of a halted CPU waits for the host",
		Fix:    "boot with idle=poll (idle CPUs then spin), or, on a KVM guest, the cpuidle-haltpoll driver"}
}

// wakeLatencyLimit is the worst wake-up lateness a bottleneck can live
// with: half the L4S step threshold (1 ms), which a late owner adds to
// every packet's sojourn.
const wakeLatencyLimit = 500 * time.Microsecond

// wakeLatency runs the wake-up probe (one real-time process per CPU, as
// run and share do) for d and reports the latest wake-up.
func wakeLatency(ctx context.Context, d time.Duration) Finding {
	var mu sync.Mutex
	var worst int64
	var wakes uint64
	rt := true
	p, err := wakeprobe.Start(10, func(r wakeprobe.Report) {
		mu.Lock()
		defer mu.Unlock()
		worst = max(worst, r.Worst)
		wakes += r.Wakes
		rt = rt && r.RealTime
	}, func() {})
	if err != nil {
		return Finding{Check: "wake-up latency", Status: Note, Detail: fmt.Sprintf("probe did not start: %v", err)}
	}
	t := time.NewTimer(d)
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	t.Stop()
	p.Stop()
	mu.Lock()
	defer mu.Unlock()
	late := time.Duration(worst)
	f := Finding{Check: "wake-up latency", Status: OK,
		Detail: fmt.Sprintf("worst %v late over %v on %d CPU(s)", late.Round(time.Microsecond), d, p.CPUs)}
	if !rt {
		f.Detail += " (not real-time: run as root for SCHED_FIFO)"
	}
	if late > wakeLatencyLimit {
		f.Status = Problem
		f.Detail = fmt.Sprintf("a real-time thread woke up to %v late (over %v on %d CPU(s)): the hop's releases are as late, against the 1 ms L4S step threshold",
			late.Round(time.Microsecond), d, p.CPUs)
		f.Fix = "a quieter machine: no other real-time or heavy load; on a VM, dedicated vCPUs"
	}
	return f
}
