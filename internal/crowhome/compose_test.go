package crowhome

import (
	"reflect"
	"strings"
	"testing"
)

func composeWith(ports ...string) string {
	var b strings.Builder
	b.WriteString("services:\n  web:\n    image: x\n    ports:\n")
	for _, p := range ports {
		b.WriteString("      - " + p + "\n")
	}
	return b.String()
}

func pp(ip string, all bool, host, container int, proto string) PublishedPort {
	return PublishedPort{Service: "web", HostIP: ip, AllAddresses: all, HostPort: host, ContainerPort: container, Protocol: proto}
}

func TestComposePorts(t *testing.T) {
	const file = "/b/funkwhale/docker-compose.yml"
	cases := []struct {
		name string
		item string
		env  map[string]string
		want []PublishedPort
		key  string // a problem instead
		msg  string
	}{
		{name: "loopback", item: `"127.0.0.1:8600:80"`, want: []PublishedPort{pp("127.0.0.1", false, 8600, 80, "tcp")}},
		{name: "unquoted", item: `127.0.0.1:8600:80`, want: []PublishedPort{pp("127.0.0.1", false, 8600, 80, "tcp")}},
		{name: "defaults from the file", item: `"${ADDR:-127.0.0.1}:${PORT:-8600}:80/tcp"`, want: []PublishedPort{pp("127.0.0.1", false, 8600, 80, "tcp")}},
		{name: "values from env", item: `"${ADDR:-127.0.0.1}:${PORT:-8600}:80"`, env: map[string]string{"ADDR": "100.64.0.5", "PORT": "9000"},
			want: []PublishedPort{pp("100.64.0.5", false, 9000, 80, "tcp")}},
		{name: ":- default for an empty value", item: `"${ADDR:-127.0.0.1}:8600:80"`, env: map[string]string{"ADDR": ""}, want: []PublishedPort{pp("127.0.0.1", false, 8600, 80, "tcp")}},
		{name: "- keeps an empty value: all addresses", item: `"${ADDR-127.0.0.1}:8600:80"`, env: map[string]string{"ADDR": ""}, want: []PublishedPort{pp("", true, 8600, 80, "tcp")}},
		{name: "nested default", item: `"${A:-${B:-127.0.0.1}}:8600:80"`, env: map[string]string{"B": "::1"}, key: `services["web"].ports[0]`, msg: "brackets"},
		{name: "nested default in brackets", item: `"[${A:-${B:-::1}}]:8600:80"`, want: []PublishedPort{pp("::1", false, 8600, 80, "tcp")}},
		{name: "$$ is a dollar", item: `"127.0.0.1:8600:80$$"`, key: `services["web"].ports[0]`, msg: "container port"},
		{name: "plain $VAR", item: `"$ADDR:8600:80"`, env: map[string]string{"ADDR": "127.0.0.1"}, want: []PublishedPort{pp("127.0.0.1", false, 8600, 80, "tcp")}},
		{name: "all addresses", item: `"8080:80"`, want: []PublishedPort{pp("", true, 8080, 80, "tcp")}},
		{name: "0.0.0.0", item: `"0.0.0.0:8080:80"`, want: []PublishedPort{pp("0.0.0.0", true, 8080, 80, "tcp")}},
		{name: "IPv6 loopback", item: `"[::1]:8080:80"`, want: []PublishedPort{pp("::1", false, 8080, 80, "tcp")}},
		{name: "IPv6 any", item: `"[::]:8080:80/udp"`, want: []PublishedPort{pp("::", true, 8080, 80, "udp")}},
		{name: "container only", item: `"80"`, want: []PublishedPort{pp("", true, 0, 80, "tcp")}},
		{name: "an integer", item: `9000`, want: []PublishedPort{pp("", true, 0, 9000, "tcp")}},
		{name: "address with a random port", item: `"127.0.0.1::80"`, want: []PublishedPort{pp("127.0.0.1", false, 0, 80, "tcp")}},
		{name: "ranges", item: `"127.0.0.1:8000-8001:80-81"`, want: []PublishedPort{pp("127.0.0.1", false, 8000, 80, "tcp"), pp("127.0.0.1", false, 8001, 81, "tcp")}},
		{name: "sctp", item: `"127.0.0.1:5000:5000/sctp"`, want: []PublishedPort{pp("127.0.0.1", false, 5000, 5000, "sctp")}},
		{name: "unset variable without a default", item: `"${ADDR}:8600:80"`, key: `services["web"].ports[0]`, msg: "ADDR, which is not set"},
		{name: "unset plain variable", item: `"$ADDR:8600:80"`, key: `services["web"].ports[0]`, msg: "ADDR, which is not set"},
		{name: "required variable", item: `"${ADDR:?set it}:8600:80"`, env: map[string]string{"ADDR": ""}, key: `services["web"].ports[0]`, msg: "requires the variable ADDR"},
		{name: "unterminated", item: `"${ADDR:-127.0.0.1:8600:80"`, key: `services["web"].ports[0]`, msg: "without its closing"},
		{name: "lone dollar", item: `"127.0.0.1:8600:80$"`, key: `services["web"].ports[0]`, msg: "lone '$'"},
		{name: "host range to one port", item: `"8000-8010:80"`, key: `services["web"].ports[0]`, msg: "docker picks at start"},
		{name: "ranges of different lengths", item: `"8000-8002:80-81"`, key: `services["web"].ports[0]`, msg: "different lengths"},
		{name: "bare IPv6", item: `"::1:8080:80"`, key: `services["web"].ports[0]`, msg: "brackets"},
		{name: "host name", item: `"localhost:8080:80"`, key: `services["web"].ports[0]`, msg: "not an IP address"},
		{name: "zone", item: `"[fe80::1%eth0]:8080:80"`, key: `services["web"].ports[0]`, msg: "not an IP address"},
		{name: "unknown protocol", item: `"8080:80/quic"`, key: `services["web"].ports[0]`, msg: "tcp, udp or sctp"},
		{name: "port too large", item: `"70000:80"`, key: `services["web"].ports[0]`, msg: "host port"},
		{name: "port zero", item: `"0:80"`, key: `services["web"].ports[0]`, msg: "1 to 65535"},
		{name: "empty container port", item: `"127.0.0.1:8080:"`, key: `services["web"].ports[0]`, msg: "container port"},
		{name: "long syntax", item: "target: 80\n        published: 8080\n        host_ip: 127.0.0.1\n        protocol: udp\n        mode: host",
			want: []PublishedPort{pp("127.0.0.1", false, 8080, 80, "udp")}},
		{name: "long syntax with a variable", item: "target: 80\n        published: \"${P:-8600}\"\n        host_ip: \"${A:-127.0.0.1}\"",
			want: []PublishedPort{pp("127.0.0.1", false, 8600, 80, "tcp")}},
		{name: "long syntax without published", item: "target: 80", want: []PublishedPort{pp("", true, 0, 80, "tcp")}},
		{name: "long syntax without host_ip", item: "target: 80\n        published: 8080", want: []PublishedPort{pp("", true, 8080, 80, "tcp")}},
		{name: "long syntax unknown key", item: "target: 80\n        published: 8080\n        hostip: 127.0.0.1", key: `services["web"].ports[0].hostip`, msg: "not a key of a compose port"},
		{name: "long syntax without target", item: "published: 8080", key: `services["web"].ports[0]`, msg: "no target"},
		{name: "long syntax unset variable", item: "target: 80\n        host_ip: ${A}", key: `services["web"].ports[0].host_ip`, msg: "A, which is not set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseCompose(file, []byte(composeWith(tc.item)), tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if tc.key != "" {
				if len(c.Problems) != 1 {
					t.Fatalf("want one problem, got %v (ports %+v)", c.Problems, c.Ports)
				}
				wantFileError(t, c.Problems[0], file, tc.key, tc.msg)
				if len(c.Ports) != 0 {
					t.Errorf("a spec not understood must publish nothing, got %+v", c.Ports)
				}
				return
			}
			if len(c.Problems) != 0 {
				t.Fatalf("unexpected problems: %v", c.Problems)
			}
			if !reflect.DeepEqual(c.Ports, tc.want) {
				t.Errorf("got  %+v\nwant %+v", c.Ports, tc.want)
			}
		})
	}
}

func TestComposeTestdata(t *testing.T) {
	const file = "testdata/docker-compose.yml"
	c, err := ReadCompose(file, map[string]string{"FUNKWHALE_NGINX_BIND_PORT": "8700"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Problems) != 0 {
		t.Fatalf("problems: %v", c.Problems)
	}
	want := []PublishedPort{
		{Service: "nginx", HostIP: "127.0.0.1", HostPort: 8700, ContainerPort: 80, Protocol: "tcp"},
		{Service: "nginx", HostIP: "127.0.0.1", HostPort: 8601, ContainerPort: 81, Protocol: "udp"},
		{Service: "nginx", HostIP: "::1", HostPort: 8602, ContainerPort: 82, Protocol: "tcp"},
		{Service: "nginx", HostIP: "127.0.0.1", HostPort: 8603, ContainerPort: 83, Protocol: "tcp"},
		{Service: "api", AllAddresses: true, HostPort: 0, ContainerPort: 9000, Protocol: "tcp"},
	}
	if !reflect.DeepEqual(c.Ports, want) {
		t.Errorf("got  %+v\nwant %+v", c.Ports, want)
	}
	if !reflect.DeepEqual(c.HostNetwork, []string{"browser"}) {
		t.Errorf("host network: %v", c.HostNetwork)
	}
}

func TestComposeStructure(t *testing.T) {
	const file = "c.yml"
	t.Run("merge keys carry ports", func(t *testing.T) {
		doc := "x-base: &base\n  ports: [\"127.0.0.1:8600:80\"]\n  network_mode: host\nservices:\n  a:\n    <<: *base\n  b:\n    <<: *base\n    ports: [\"127.0.0.1:8700:80\"]\n    network_mode: bridge\n"
		c, err := parseCompose(file, []byte(doc), nil)
		if err != nil || len(c.Problems) != 0 {
			t.Fatal(err, c.Problems)
		}
		want := []PublishedPort{
			{Service: "a", HostIP: "127.0.0.1", HostPort: 8600, ContainerPort: 80, Protocol: "tcp"},
			{Service: "b", HostIP: "127.0.0.1", HostPort: 8700, ContainerPort: 80, Protocol: "tcp"},
		}
		if !reflect.DeepEqual(c.Ports, want) || !reflect.DeepEqual(c.HostNetwork, []string{"a"}) {
			t.Errorf("got %+v %v", c.Ports, c.HostNetwork)
		}
	})
	t.Run("network_mode from a variable", func(t *testing.T) {
		doc := "services:\n  a:\n    network_mode: ${NM:-bridge}\n  b:\n    network_mode: ${NM2:-host}\n  c:\n    network_mode: ${NM3}\n"
		c, err := parseCompose(file, []byte(doc), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(c.HostNetwork, []string{"b"}) {
			t.Errorf("host network: %v", c.HostNetwork)
		}
		if len(c.Problems) != 1 {
			t.Fatalf("problems: %v", c.Problems)
		}
		wantFileError(t, c.Problems[0], file, `services["c"].network_mode`, "NM3")
	})
	problems := []struct{ name, doc, key, msg string }{
		{"duplicate ports key", "services:\n  a:\n    ports: [\"1:1\"]\n    ports: [\"2:2\"]\n", `services["a"].ports`, "given twice"},
		{"duplicate service", "services:\n  a:\n    ports: [\"1:1\"]\n  a:\n    image: x\n", `services["a"]`, "given twice"},
		{"extends", "services:\n  a:\n    extends: {file: other.yml, service: b}\n", `services["a"].extends`, "not followed"},
		{"include", "include: [other.yml]\nservices:\n  a:\n    image: x\n", `include`, "not followed"},
		{"ports a string", "services:\n  a:\n    ports: \"80:80\"\n", `services["a"].ports`, "must be a list"},
		{"port item a list", "services:\n  a:\n    ports: [[80]]\n", `services["a"].ports[0]`, "neither"},
		{"service a list", "services:\n  a: [1]\n", `services["a"]`, "not a mapping"},
	}
	for _, tc := range problems {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseCompose(file, []byte(tc.doc), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Problems) == 0 {
				t.Fatalf("want a problem, got ports %+v", c.Ports)
			}
			wantFileError(t, c.Problems[0], file, tc.key, tc.msg)
		})
	}
	whole := []struct{ name, doc, key, msg string }{
		{"not YAML", "services: [\n", "", "not valid YAML"},
		{"empty", "", "", "empty"},
		{"two documents", "services: {}\n---\nservices: {}\n", "", "more than one YAML document"},
		{"no services", "version: '3'\n", "", "no services key"},
		{"services a list", "services: [a, b]\n", "services", "mapping of service names"},
		{"a list", "- a\n", "", "must be a mapping"},
		{"NUL", "services:\n  a:\n    image: \"x\x00\"\n", "", "NUL byte"},
	}
	for _, tc := range whole {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseCompose(file, []byte(tc.doc), nil)
			wantFileError(t, err, file, tc.key, tc.msg)
		})
	}
	// Positive control: a service with no ports and a null service.
	c, err := parseCompose(file, []byte("services:\n  a:\n    image: x\n  b:\n  c:\n    ports:\n"), nil)
	if err != nil || len(c.Problems) != 0 || len(c.Ports) != 0 {
		t.Errorf("%v %v %v", err, c.Problems, c.Ports)
	}
}
