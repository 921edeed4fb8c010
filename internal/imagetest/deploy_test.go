package imagetest

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// What deploy/ is checked against: docs/containers.md's table of what each
// command needs. containerlab and Kubernetes do not run on the project's
// machines, so their files are checked here as far as that goes without
// them: they parse, and name the images, capabilities, devices and
// commands the docs give.

// composeFile is the part of deploy/compose/compose.yaml checked.
type composeFile struct {
	Networks map[string]struct {
		DriverOpts map[string]string `yaml:"driver_opts"`
		IPAM       struct {
			Config []struct {
				Subnet  string `yaml:"subnet"`
				Gateway string `yaml:"gateway"`
			} `yaml:"config"`
		} `yaml:"ipam"`
	} `yaml:"networks"`
	Services map[string]struct {
		Image       string                       `yaml:"image"`
		Privileged  bool                         `yaml:"privileged"`
		CapAdd      []string                     `yaml:"cap_add"`
		Devices     []string                     `yaml:"devices"`
		NetworkMode string                       `yaml:"network_mode"`
		Networks    map[string]map[string]string `yaml:"networks"`
		Command     []string                     `yaml:"command"`
		Profiles    []string                     `yaml:"profiles"`
	} `yaml:"services"`
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", path))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// flagValue is the word after flag in args, or "".
func flagValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// TestDeployCompose: every service but the optional Prometheus runs the
// pi2hop image (so the lab comes up offline); the hop runs `run` with
// NET_ADMIN and the TUN device alone, its --lan and --wan naming the
// prefixes of the lan and wan networks, which carry no host address so
// that the hop answers for their gateways; the endpoints run `pi2hop flow`.
func TestDeployCompose(t *testing.T) {
	var c composeFile
	readYAML(t, "deploy/compose/compose.yaml", &c)
	const image = "${PI2HOP_IMAGE:-pi2hop:latest}"
	for name, s := range c.Services {
		switch {
		case len(s.Profiles) > 0:
			continue // optional: pulled, so not part of the offline lab
		case s.Image != image:
			t.Errorf("service %s: image %q, want %q", name, s.Image, image)
		case s.Privileged || s.NetworkMode == "host":
			t.Errorf("service %s: privileged or on the host's network", name)
		case name != "hop" && (len(s.Command) < 2 || s.Command[0] != "flow"):
			t.Errorf("service %s: command %q, want a pi2hop flow endpoint", name, s.Command)
		}
	}
	hop := c.Services["hop"]
	if !slices.Equal(hop.CapAdd, []string{"NET_ADMIN"}) || !slices.Equal(hop.Devices, []string{"/dev/net/tun"}) {
		t.Errorf("hop: cap_add %q, devices %q; want NET_ADMIN and /dev/net/tun only", hop.CapAdd, hop.Devices)
	}
	if len(hop.Command) == 0 || hop.Command[0] != "run" {
		t.Fatalf("hop: command %q, want pi2hop run", hop.Command)
	}
	for _, side := range []string{"lan", "wan"} {
		n, ok := c.Networks[side]
		if !ok || len(n.IPAM.Config) != 1 {
			t.Errorf("network %s: missing, or not one subnet", side)
			continue
		}
		if got, want := flagValue(hop.Command, "--"+side), n.IPAM.Config[0].Subnet; got != want {
			t.Errorf("hop: --%s %q, want the %s network's subnet %s", side, got, side, want)
		}
		if n.DriverOpts["com.docker.network.bridge.inhibit_ipv4"] != "true" {
			t.Errorf("network %s: the host takes its gateway address; want inhibit_ipv4, for the hop to answer for it", side)
		}
		sub, err1 := netip.ParsePrefix(n.IPAM.Config[0].Subnet)
		gw, err2 := netip.ParseAddr(n.IPAM.Config[0].Gateway)
		if err1 != nil || err2 != nil || !sub.Contains(gw) {
			t.Errorf("network %s: subnet %q, gateway %q: want a gateway inside the subnet", side, n.IPAM.Config[0].Subnet, n.IPAM.Config[0].Gateway)
		}
		if a := hop.Networks[side]["ipv4_address"]; a == "" {
			t.Errorf("hop: no fixed address on %s", side)
		}
	}
	// Docker gives a container its default route and published ports on
	// the attached network whose name sorts first.
	first := ""
	for n := range hop.Networks {
		if first == "" || n < first {
			first = n
		}
	}
	if c.Networks[first].DriverOpts["com.docker.network.bridge.inhibit_ipv4"] == "true" {
		t.Errorf("hop: its first network by name, %s, has no host address: the published /metrics port would not reach it", first)
	}
}

// TestDeployContainerlab: the topology's three nodes, the hop with
// NET_ADMIN and the TUN device alone running `pi2hop run` between the two
// interfaces its links give it, waiting for them; every link's ends are
// nodes of the file.
func TestDeployContainerlab(t *testing.T) {
	var c struct {
		Name     string
		Topology struct {
			Nodes map[string]struct {
				Kind    string   `yaml:"kind"`
				Image   string   `yaml:"image"`
				CapAdd  []string `yaml:"cap-add"`
				Devices []string `yaml:"devices"`
				Cmd     string   `yaml:"cmd"`
				Exec    []string `yaml:"exec"`
			} `yaml:"nodes"`
			Links []struct {
				Endpoints []string `yaml:"endpoints"`
			} `yaml:"links"`
		} `yaml:"topology"`
	}
	readYAML(t, "deploy/containerlab/pi2hop.clab.yml", &c)
	nodes := c.Topology.Nodes
	for _, n := range []string{"hop", "client", "server"} {
		if nodes[n].Kind != "linux" || nodes[n].Image != "pi2hop-tools:latest" {
			t.Errorf("node %s: kind %q, image %q; want linux, pi2hop-tools:latest", n, nodes[n].Kind, nodes[n].Image)
		}
	}
	hop := nodes["hop"]
	if !slices.Equal(hop.CapAdd, []string{"NET_ADMIN"}) || !slices.Equal(hop.Devices, []string{"/dev/net/tun"}) {
		t.Errorf("hop: cap-add %q, devices %q; want NET_ADMIN and /dev/net/tun only", hop.CapAdd, hop.Devices)
	}
	cmd := strings.Fields(hop.Cmd)
	if len(cmd) < 2 || cmd[0] != "pi2hop" || cmd[1] != "run" || flagValue(cmd, "--wait-interfaces") == "" {
		t.Fatalf("hop: cmd %q, want pi2hop run with --wait-interfaces", hop.Cmd)
	}
	hopIfs := map[string]bool{}
	for _, l := range c.Topology.Links {
		if len(l.Endpoints) != 2 {
			t.Errorf("link %q: want two ends", l.Endpoints)
		}
		for _, e := range l.Endpoints {
			node, iface, _ := strings.Cut(e, ":")
			if _, ok := nodes[node]; !ok || iface == "" {
				t.Errorf("link end %q: not NODE:INTERFACE of a node here", e)
			}
			if node == "hop" {
				hopIfs[iface] = true
			}
		}
	}
	for _, f := range []string{"--lan", "--wan"} {
		if !hopIfs[flagValue(cmd, f)] {
			t.Errorf("hop: %s %q is not one of its links' interfaces %v", f, flagValue(cmd, f), hopIfs)
		}
	}
}

// TestDeployK8s: a Job whose one container runs `pi2hop shell`, not
// privileged, with NET_ADMIN and SYS_ADMIN added and the node's TUN device
// mounted where pi2hop opens it.
func TestDeployK8s(t *testing.T) {
	var j struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Spec       struct {
			Template struct {
				Spec struct {
					RestartPolicy string `yaml:"restartPolicy"`
					Containers    []struct {
						Image           string   `yaml:"image"`
						Command         []string `yaml:"command"`
						SecurityContext struct {
							Privileged   *bool `yaml:"privileged"`
							Capabilities struct {
								Add []string `yaml:"add"`
							} `yaml:"capabilities"`
						} `yaml:"securityContext"`
						VolumeMounts []struct {
							Name      string `yaml:"name"`
							MountPath string `yaml:"mountPath"`
						} `yaml:"volumeMounts"`
					} `yaml:"containers"`
					Volumes []struct {
						Name     string `yaml:"name"`
						HostPath struct {
							Path string `yaml:"path"`
							Type string `yaml:"type"`
						} `yaml:"hostPath"`
					} `yaml:"volumes"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	readYAML(t, "deploy/k8s/shell-job.yaml", &j)
	if j.APIVersion != "batch/v1" || j.Kind != "Job" || j.Spec.Template.Spec.RestartPolicy != "Never" {
		t.Errorf("%s %s, restartPolicy %q: want a batch/v1 Job that is not restarted", j.APIVersion, j.Kind, j.Spec.Template.Spec.RestartPolicy)
	}
	pod := j.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if len(c.Command) < 3 || c.Command[0] != "pi2hop" || c.Command[1] != "shell" || !slices.Contains(c.Command, "--") {
		t.Errorf("command %q, want pi2hop shell ... -- TEST", c.Command)
	}
	if c.SecurityContext.Privileged == nil || *c.SecurityContext.Privileged {
		t.Error("the container is privileged, or does not say it is not")
	}
	if caps := slices.Sorted(slices.Values(c.SecurityContext.Capabilities.Add)); !slices.Equal(caps, []string{"NET_ADMIN", "SYS_ADMIN"}) {
		t.Errorf("capabilities %q, want NET_ADMIN and SYS_ADMIN", caps)
	}
	tun := ""
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/dev/net/tun" {
			tun = m.Name
		}
	}
	ok := false
	for _, v := range pod.Volumes {
		ok = ok || v.Name == tun && v.HostPath.Path == "/dev/net/tun" && v.HostPath.Type == "CharDevice"
	}
	if !ok {
		t.Error("the node's /dev/net/tun is not mounted at /dev/net/tun as a CharDevice hostPath")
	}
}

// TestDeployDocs: docs/containers.md names every image deploy/ uses and
// says what of deploy/ is not run here.
func TestDeployDocs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "containers.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, s := range []string{"pi2hop:latest", "pi2hop-tools:latest", "PI2HOP_IMAGE", "Not run here"} {
		if !strings.Contains(doc, s) {
			t.Errorf("docs/containers.md does not mention %q", s)
		}
	}
}
