package imagetest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fixture is what the tests share: one dockerd of their own and the image
// make image built in it. Starting dockerd and building the image take
// seconds, so the first test that needs them starts them and TestMain
// stops dockerd after the last.
type fixture struct {
	host string // DOCKER_HOST
	tag  string // the image make image built
	repo string // the module's root
	bin  string // the binary in the image
	// rtRuntime is what a container must add to have real-time runtime
	// (--cpu-rt-runtime), none where a capability is enough.
	rtRuntime []string
}

var shared struct {
	once sync.Once
	f    *fixture
	err  error
	stop func() error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.stop != nil {
		if err := shared.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "imagetest:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// getFixture starts the shared dockerd and builds the image once; a test
// that cannot have them fails.
func getFixture(t *testing.T) *fixture {
	t.Helper()
	shared.once.Do(func() { shared.f, shared.err = newFixture() })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.f
}

func newFixture() (*fixture, error) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		return nil, err
	}
	host, rt, stop, err := startDockerd()
	if err != nil {
		return nil, err
	}
	shared.stop = stop
	mk := exec.Command("make", "-s", "-C", repo, "image", "IMAGE=pi2hop-test")
	mk.Env = append(os.Environ(), "DOCKER_HOST="+host)
	var stderr bytes.Buffer
	mk.Stderr = &stderr
	out, err := mk.Output()
	if err != nil {
		return nil, fmt.Errorf("make image: %v\n%s%s", err, out, stderr.String())
	}
	tag := strings.TrimSpace(string(out))
	if !strings.HasPrefix(tag, "pi2hop-test:") {
		return nil, fmt.Errorf("make image printed %q, want the tag pi2hop-test:VERSION", tag)
	}
	return &fixture{host: host, tag: tag, repo: repo, bin: filepath.Join(repo, "bin/image/pi2hop"), rtRuntime: rt}, nil
}

// docker is a docker command against the fixture's dockerd.
func (f *fixture) docker(args ...string) *exec.Cmd {
	return exec.Command("docker", append([]string{"-H", f.host}, args...)...)
}

// logsSay waits up to within for container id's output (docker logs,
// both streams) to hold every one of wants, and returns the output and
// whether it did. A hop writes its degradation lines after its start-up
// message, each when it is ready, so a test that reads the output once
// can come between them.
func (f *fixture) logsSay(id string, within time.Duration, wants ...string) ([]byte, bool) {
	deadline := time.Now().Add(within)
	for {
		logs, _ := f.docker("logs", id).CombinedOutput()
		all := true
		for _, w := range wants {
			all = all && bytes.Contains(logs, []byte(w))
		}
		if all || time.Now().After(deadline) {
			return logs, all
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// rtGroupRuntime is the real-time runtime, in µs per second and CPU, that
// the dockerd's cgroup and a container that asks for it get.
const rtGroupRuntime = "900000"

// startDockerd starts a dockerd that touches nothing of the host's: its
// own data and exec roots, pid file and socket in a temporary folder, no
// iptables rules, no default bridge, no forwarding. It returns the
// DOCKER_HOST to use, what a container adds to get real-time runtime, and
// the function that stops it, removes its folder and cgroups and checks
// the host's IPv4 forwarding is as it was.
//
// Under cgroup v1 with real-time group scheduling a cgroup has no
// real-time runtime unless given some, and the kernel refuses SCHED_FIFO
// in it whatever the capabilities: the dockerd gets a parent cgroup of its
// own with runtime to give (--cgroup-parent, --cpu-rt-runtime), removed
// when it stops.
func startDockerd() (host string, rt []string, stop func() error, err error) {
	dir, err := os.MkdirTemp("", "p2dk")
	if err != nil {
		return "", nil, nil, err
	}
	host = "unix://" + filepath.Join(dir, "docker.sock")
	args := []string{"--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "docker.pid"), "-H", host, "--iptables=false", "--ip6tables=false", "--bridge=none",
		"--ip-forward=false",   // dockerd would switch the host's forwarding on, and new namespaces inherit it
		"--storage-driver=vfs"} // no overlay mounts to leave behind
	parent := filepath.Base(dir)
	if _, err := os.Stat("/sys/fs/cgroup/cpu/cpu.rt_runtime_us"); err == nil {
		args = append(args, "--cgroup-parent", "/"+parent, "--cpu-rt-runtime", rtGroupRuntime)
		rt = []string{"--cpu-rt-runtime", rtGroupRuntime}
	}
	d := exec.Command("dockerd", args...)
	var log bytes.Buffer
	d.Stdout, d.Stderr = &log, &log
	forwarding, err := hostForwarding()
	if err != nil {
		return "", nil, nil, err
	}
	if err := d.Start(); err != nil {
		return "", nil, nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- d.Wait() }()
	stop = func() error {
		var errs []string
		d.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			errs = append(errs, "dockerd still running 15s after SIGTERM: killed")
			d.Process.Kill()
			<-exited
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Sprintf("removing dockerd's folder: %v", err))
		}
		if rt != nil {
			cgs, _ := filepath.Glob("/sys/fs/cgroup/*/" + parent)
			for _, cg := range cgs {
				if err := os.Remove(cg); err != nil {
					errs = append(errs, fmt.Sprintf("removing dockerd's cgroup: %v", err))
				}
			}
		}
		if now, err := hostForwarding(); err != nil || now != forwarding {
			errs = append(errs, fmt.Sprintf("the host's IPv4 forwarding is %q (%v) after dockerd, was %q", now, err, forwarding))
		}
		if len(errs) > 0 {
			return fmt.Errorf("%s", strings.Join(errs, "; "))
		}
		return nil
	}
	deadline := time.Now().Add(20 * time.Second)
	for exec.Command("docker", "-H", host, "version").Run() != nil {
		select {
		case err := <-exited:
			exited <- err
			stop()
			return "", nil, nil, fmt.Errorf("dockerd exited: %v\n%s", err, log.String())
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, nil, fmt.Errorf("dockerd did not answer on %s within 20s\n%s", host, log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return host, rt, stop, nil
}

// hostForwarding reads net.ipv4.ip_forward, which dockerd must leave as
// it was: every new network namespace copies it.
func hostForwarding() (string, error) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	return strings.TrimSpace(string(b)), err
}
