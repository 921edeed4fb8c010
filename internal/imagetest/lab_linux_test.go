package imagetest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/pi2hop/pi2hop/testbed/report"
)

// TestLabInContainer runs pi2hop lab in a container that is not
// privileged and has no network (--network none), with the TUN device:
//   - with NET_ADMIN, SYS_ADMIN and SYS_NICE, /dev/cpu_dma_latency and,
//     where the kernel's cgroups need it, real-time runtime (startDockerd),
//     the hop runs as on the host, degraded in nothing (real-time owners,
//     its PM QoS request held), and l4s-demo --quick passes the checks its
//     report encodes, held as cmd/pi2hop's TestLabScenarios holds the other
//     scenarios (this is make test's l4s-demo run: it runs here instead of
//     on the host, so the suite's time does not grow);
//   - without SYS_NICE, a short lab (prague, one run of 2 s: what is
//     checked is the run's end and what it says, not its figures) runs to
//     the end and both its start-up line and its report say pacing was
//     degraded and why;
//   - neither leaves a namespace, link, mount or container on the host.
func TestLabInContainer(t *testing.T) {
	roottest.Need(t, "dockerd", "docker", "make", "ip")
	f := getFixture(t)
	for _, tt := range []struct {
		name  string
		caps  []string
		devs  []string // devices beside /dev/net/tun
		rt    bool     // real-time runtime where the cgroup needs it (fixture.rtRuntime)
		args  []string
		check func(t *testing.T, rep *report.Report, dir, stderr string)
	}{
		{"all-caps", []string{"NET_ADMIN", "SYS_ADMIN", "SYS_NICE"}, []string{"/dev/cpu_dma_latency"}, true, []string{"l4s-demo", "--quick"}, checkL4SDemo},
		{"no-sys-nice", []string{"NET_ADMIN", "SYS_ADMIN"}, nil, false, []string{"prague", "--quick", "--duration", "2s", "--warmup", "1s"}, checkDegraded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lab := roottest.Name("p2k") // the lab's --name, and the container's
			dir := t.TempDir()
			args := []string{"run", "--rm", "--name", lab, "--network", "none", "--device", "/dev/net/tun", "-v", dir + ":/out"}
			for _, c := range tt.caps {
				args = append(args, "--cap-add", c)
			}
			for _, d := range tt.devs {
				args = append(args, "--device", d)
			}
			var rt []string
			if tt.rt {
				rt = f.rtRuntime
				args = append(args, rt...)
			}
			args = append(append(append(args, f.tag, "lab"), tt.args...), "--name", lab, "--out", "/out/report", "--plot-format", "png,svg")
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "docker", append([]string{"-H", f.host}, args...)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			err := cmd.Run()
			t.Logf("lab %s in a container with %s %s: %v\n%s", strings.Join(tt.args, " "), strings.Join(tt.caps, ", "), strings.Join(rt, " "), time.Since(start).Round(time.Second), stdout.String())
			if err != nil {
				t.Fatalf("docker run ... lab: %v (waited at most 3m)\n%s", err, stderr.String())
			}
			leftOnHost(t, f, lab)
			rep, err := report.Read(filepath.Join(dir, "report"))
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, rep, filepath.Join(dir, "report"), stderr.String())
		})
	}
}

// checkL4SDemo holds an l4s-demo --quick report to what TestLabScenarios
// holds the host's runs to: three runs, the plots, and every check passed.
func checkL4SDemo(t *testing.T, rep *report.Report, dir, stderr string) {
	if rep.Scenario != "l4s-demo" || len(rep.Runs) != 3 || rep.Config == nil || rep.Versions.Go == "" {
		t.Fatalf("report: scenario %q, %d runs, config %v, versions %+v", rep.Scenario, len(rep.Runs), rep.Config, rep.Versions)
	}
	plots := strings.Join(rep.Plots, " ")
	for _, p := range []string{"rtt_cdf.png", "rtt_ccdf.png", "rtt_ccdf.svg", "sojourn_ccdf.svg", "fps.png", "queue_delay_dualpi2-l4s.png", "throughput_fifo-classic.svg"} {
		if !strings.Contains(plots, p) {
			t.Errorf("plot %s missing from %q", p, plots)
		}
	}
	if len(rep.Checks) == 0 {
		t.Fatal("no acceptance checks in the report")
	}
	for _, c := range rep.Checks {
		if !c.Pass {
			t.Errorf("%s: %s", c.Name, c.Detail)
		}
	}
	for _, n := range rep.Notes {
		if strings.HasPrefix(n, "Degraded:") {
			t.Errorf("the hop did not run as on the host: %s", n)
		}
	}
}

// checkDegraded: the start-up line and the report name the missing
// CAP_SYS_NICE and what it costs.
func checkDegraded(t *testing.T, rep *report.Report, dir, stderr string) {
	const why, effect = "no CAP_SYS_NICE", "pacing degraded"
	line := false
	for _, l := range strings.Split(stderr, "\n") {
		line = line || strings.HasPrefix(l, "pi2hop lab: ") && strings.Contains(l, why) && strings.Contains(l, effect)
	}
	if !line {
		t.Errorf("no start-up line saying %q and %q:\n%s", why, effect, stderr)
	}
	md, err := os.ReadFile(filepath.Join(dir, report.MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(md, []byte("Degraded: "+why)) || !bytes.Contains(md, []byte(effect)) {
		t.Errorf("report.md does not say %q and %q", "Degraded: "+why, effect)
	}
	if len(rep.Runs) != 1 || rep.Runs[0].Error != "" {
		t.Errorf("report: %d runs (%+v), want prague's one run to the end", len(rep.Runs), rep.Runs)
	}
}

// leftOnHost fails t if the host holds anything of the lab named lab: a
// network namespace or link with its name, a procfs the lab mounted for
// its sysctls, or its container.
func leftOnHost(t *testing.T, f *fixture, lab string) {
	t.Helper()
	for _, c := range [][]string{{"ip", "netns", "list"}, {"ip", "-o", "link", "show"}} {
		out, err := exec.Command(c[0], c[1:]...).CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v\n%s", strings.Join(c, " "), err, out)
		} else if bytes.Contains(out, []byte(lab)) {
			t.Errorf("%s after the lab in a container shows its name %s:\n%s", strings.Join(c, " "), lab, out)
		}
	}
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err != nil || bytes.Contains(mi, []byte("pi2hop-proc")) {
		t.Errorf("a procfs the lab mounted is left on the host (%v)", err)
	}
	if out, err := f.docker("ps", "-aq", "--filter", "name="+lab).Output(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("the lab's container is left: %q (%v)", out, err)
	}
}
