package imagetest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/internal/roottest"
)

// imageBinary is where deploy/Dockerfile puts pi2hop in the image: a
// program of the image's, not of the host's.
const imageBinary = "/usr/bin/pi2hop"

// TestImage: make image builds offline; the image is under 30 MB, prints
// the binary's version, and in a container with NET_ADMIN and the TUN
// device alone shell exits 2 naming CAP_SYS_ADMIN; with SYS_ADMIN too it
// runs its command.
func TestImage(t *testing.T) {
	roottest.Need(t, "dockerd", "docker", "make", "ip")
	t.Parallel()
	f := getFixture(t)
	tag, docker := f.tag, f.docker
	size, err := docker("image", "inspect", "-f", "{{.Size}}", tag).Output()
	if err != nil {
		t.Fatalf("docker image inspect: %v", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(size)), 10, 64)
	if err != nil || n >= 30e6 {
		t.Errorf("image %s: %s bytes (%v), want under 30 MB", tag, size, err)
	}
	t.Logf("image %s: %d bytes", tag, n)

	want, err := exec.Command(f.bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	got, err := docker("run", "--rm", "--network", "none", tag, "version").Output()
	if err != nil || !bytes.Equal(got, want) || !bytes.HasPrefix(got, []byte("pi2hop ")) {
		t.Errorf("docker run %s version: %q (%v), want the binary's %q", tag, got, err, want)
	}

	var stderr bytes.Buffer
	sh := docker("run", "--rm", "--network", "none", "--cap-add", "NET_ADMIN", "--device", "/dev/net/tun", tag, "shell", "--", "true")
	sh.Stderr = &stderr
	err = sh.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "needs CAP_SYS_ADMIN") {
		t.Errorf("shell in a container with NET_ADMIN alone: %v, stderr %q; want exit 2 naming CAP_SYS_ADMIN", err, stderr.String())
	}

	// shell with NET_ADMIN and SYS_ADMIN, as deploy/k8s's Job runs it: the
	// command runs behind the hop and its exit status is shell's. IPv6 is
	// on, as shell addresses both families.
	var shOut bytes.Buffer
	sh = docker("run", "--rm", "--network", "none", "--cap-add", "NET_ADMIN", "--cap-add", "SYS_ADMIN", "--device", "/dev/net/tun",
		"--sysctl", "net.ipv6.conf.all.disable_ipv6=0", "--sysctl", "net.ipv6.conf.default.disable_ipv6=0",
		tag, "shell", "--as-root", "--rate", "10mbit", "--delay", "10ms", "--floor-probe=false", "--", imageBinary, "version")
	sh.Stdout, sh.Stderr = &shOut, &shOut
	if err := sh.Run(); err != nil || !bytes.Contains(shOut.Bytes(), want) {
		t.Errorf("shell in a container with NET_ADMIN and SYS_ADMIN: %v, want it to run pi2hop version behind the hop:\n%s", err, shOut.String())
	}

	// run with NET_ADMIN and the TUN device only, no network of docker's:
	// its two interfaces are moved in after it started, as containerlab
	// attaches them, and it comes up between them.
	name := "p2img" + strconv.Itoa(os.Getpid()%10000)
	runArgs := []string{"run", "-d", "--name", name, "--network", "none", "--cap-add", "NET_ADMIN", "--device", "/dev/net/tun",
		"--sysctl", "net.ipv4.ip_forward=1", "--sysctl", "net.ipv6.conf.all.forwarding=1",
		"--sysctl", "net.ipv4.conf.all.rp_filter=0", "--sysctl", "net.ipv4.conf.default.rp_filter=0",
		// Docker turns IPv6 off in a container; the gateway routes both families.
		"--sysctl", "net.ipv6.conf.all.disable_ipv6=0", "--sysctl", "net.ipv6.conf.default.disable_ipv6=0",
		tag, "run", "--lan", "lp0", "--wan", "lp1", "--wait-interfaces", "10s", "--rate", "10mbit", "--floor-probe=false"}
	if out, err := docker(runArgs...).CombinedOutput(); err != nil {
		t.Fatalf("docker run: %v\n%s", err, out)
	}
	t.Cleanup(func() { docker("rm", "-f", name).Run() })
	pid, err := docker("inspect", "-f", "{{.State.Pid}}", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"link", "add", name + "a", "type", "veth", "peer", "name", name + "b"},
		{"link", "set", name + "a", "netns", strings.TrimSpace(string(pid)), "name", "lp0"},
		{"link", "set", name + "b", "netns", strings.TrimSpace(string(pid)), "name", "lp1"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			exec.Command("ip", "link", "del", name+"a").Run()
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if logs, ok := f.logsSay(name, 10*time.Second, "pi2hop run \""); !ok {
		t.Fatalf("run in the container did not come up within 10s:\n%s", logs)
	}
	if logs, ok := f.logsSay(name, 10*time.Second, "no CAP_SYS_NICE"); !ok {
		t.Errorf("no line on the missing CAP_SYS_NICE in the start-up output within 10s of it:\n%s", logs)
	}
	if out, err := docker("stop", "-t", "10", name).CombinedOutput(); err != nil {
		t.Fatalf("docker stop: %v\n%s", err, out)
	}
	code, _ := docker("inspect", "-f", "{{.State.ExitCode}}", name).Output()
	if strings.TrimSpace(string(code)) != "0" {
		logs, _ := docker("logs", name).CombinedOutput()
		t.Errorf("run in the container exited %s after SIGTERM, want 0:\n%s", code, logs)
	}
}
