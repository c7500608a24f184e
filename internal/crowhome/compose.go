package crowhome

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Compose is what an add-on's compose file publishes on the host.
type Compose struct {
	// Ports are the published ports, one per host port, in file order.
	Ports []PublishedPort
	// HostNetwork are the services with network_mode: host, sorted. Such a
	// service publishes every port it listens on, on every address.
	HostNetwork []string
	// Problems are the parts that could not be understood (an unset
	// variable, a range docker resolves at start, include/extends). They are
	// unknowns, not absences: a caller that needs to know what is published
	// must treat a file with problems as not fully known.
	Problems []*FileError
}

// PublishedPort is one host port a service publishes.
type PublishedPort struct {
	// Service is the compose service.
	Service string
	// HostIP is the host address in canonical form, "" when the spec gives
	// none.
	HostIP string
	// AllAddresses is true when the port is bound on every host address:
	// no address given, 0.0.0.0 or ::.
	AllAddresses bool
	// HostPort is the host port; 0 when docker picks one at start.
	HostPort int
	// ContainerPort is the port inside the container.
	ContainerPort int
	// Protocol is tcp, udp or sctp.
	Protocol string
}

// maxPublished bounds what ranges can expand to.
const maxPublished = 4096

// ReadCompose reads a compose file and reports which ports it publishes,
// on which host address and protocol, substituting ${VAR} forms from env
// (and from their own :-defaults) only. The error is a *FileError for a
// file that cannot be read or is not a compose document; what could not be
// understood inside it is in Compose.Problems.
func ReadCompose(file string, env map[string]string) (*Compose, error) {
	data, err := readRegular(file, false)
	if err != nil {
		return nil, err
	}
	return parseCompose(file, data, env)
}

type composeReader struct {
	file string
	env  map[string]string
	out  *Compose
}

func parseCompose(file string, data []byte, env map[string]string) (*Compose, error) {
	if len(data) > MaxFileSize {
		return nil, &FileError{File: file, Msg: fmt.Sprintf("is larger than %d bytes", MaxFileSize)}
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, &FileError{File: file, Msg: "has a NUL byte"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &FileError{File: file, Msg: "is empty, not a compose file"}
		}
		return nil, &FileError{File: file, Msg: "is not valid YAML: " + err.Error(), Err: err}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, &FileError{File: file, Msg: "has more than one YAML document; a compose file has one"}
	}
	r := &composeReader{file: file, env: env, out: &Compose{}}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	top, ok := r.mapping(root, nil, 0)
	if !ok {
		return nil, r.errAt(nil, root, "must be a mapping with a services key")
	}
	if n, ok := top["include"]; ok {
		r.problem(path(nil).field("include"), n, "includes other compose files; their ports are not followed")
	}
	svcNode, ok := top["services"]
	if !ok {
		return nil, r.errAt(nil, root, "has no services key")
	}
	svcAt := path(nil).field("services")
	services, ok := r.mapping(svcNode, svcAt, 0)
	if !ok {
		return nil, r.errAt(svcAt, svcNode, "must be a mapping of service names")
	}
	names := make([]string, 0, len(services))
	for name := range services {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := services[names[i]], services[names[j]]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return names[i] < names[j]
	})
	for _, name := range names {
		r.service(name, services[name], svcAt.mapKey(name))
	}
	sort.Strings(r.out.HostNetwork)
	return r.out, nil
}

func (r *composeReader) errAt(at path, n *yaml.Node, msg string) *FileError {
	if n == nil {
		return fileErr(r.file, at, "%s", msg)
	}
	return fileErr(r.file, at, "%s (line %d)", msg, n.Line)
}

func (r *composeReader) problem(at path, n *yaml.Node, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	r.out.Problems = append(r.out.Problems, fileErr(r.file, at, "%s (line %d)", fmt.Sprintf(format, args...), line))
}

// resolve follows aliases (*name) to the node they stand for.
func resolve(n *yaml.Node) *yaml.Node {
	for hops := 0; n != nil && n.Kind == yaml.AliasNode && hops < 16; hops++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// mapping returns a mapping's entries with YAML merge keys (<<) applied —
// the mapping's own keys win over merged ones, and earlier merge sources
// over later. A key given twice is reported and dropped: which one compose
// would take is not this reader's guess to make.
func (r *composeReader) mapping(n *yaml.Node, at path, depth int) (map[string]*yaml.Node, bool) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, false
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	dup := make(map[string]bool)
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k == nil || k.Kind != yaml.ScalarNode {
			r.problem(at, n.Content[i], "has a key that is not a plain name")
			continue
		}
		if k.Tag == "!!merge" || (k.Value == "<<" && k.Style == 0) {
			merges = append(merges, v)
			continue
		}
		if _, seen := out[k.Value]; seen || dup[k.Value] {
			if !dup[k.Value] {
				kat := at.field(k.Value)
				if at.depth() == 1 && at.s.key == "services" {
					kat = at.mapKey(k.Value) // a service name
				}
				r.problem(kat, k, "is given twice in one mapping; neither is used")
			}
			dup[k.Value] = true
			delete(out, k.Value)
			continue
		}
		out[k.Value] = v
	}
	if len(merges) > 0 && depth >= 8 {
		r.problem(at, n, "merges (<<) nest deeper than 8 levels; the merged keys are not read")
		return out, true
	}
	for _, m := range merges {
		sources := []*yaml.Node{m}
		if rm := resolve(m); rm != nil && rm.Kind == yaml.SequenceNode {
			sources = rm.Content
		}
		for _, src := range sources {
			merged, ok := r.mapping(src, at, depth+1)
			if !ok {
				r.problem(at, m, "merges (<<) something that is not a mapping")
				continue
			}
			for k, v := range merged {
				if _, own := out[k]; !own && !dup[k] {
					out[k] = v
				}
			}
		}
	}
	return out, true
}

func (r *composeReader) service(name string, n *yaml.Node, at path) {
	if rn := resolve(n); rn != nil && isNull(rn) {
		return
	}
	svc, ok := r.mapping(n, at, 0)
	if !ok {
		r.problem(at, n, "is not a mapping")
		return
	}
	if e, ok := svc["extends"]; ok {
		r.problem(at.field("extends"), e, "extends another service; ports it inherits are not followed")
	}
	if nm, ok := svc["network_mode"]; ok {
		r.networkMode(name, nm, at.field("network_mode"))
	}
	pn, ok := svc["ports"]
	if !ok {
		return
	}
	pat := at.field("ports")
	ports := resolve(pn)
	if ports == nil || isNull(ports) {
		return
	}
	if ports.Kind != yaml.SequenceNode {
		r.problem(pat, pn, "must be a list")
		return
	}
	for i, item := range ports.Content {
		iat := pat.index(i)
		item = resolve(item)
		switch {
		case item == nil:
			continue
		case item.Kind == yaml.ScalarNode:
			r.shortPort(name, item, iat)
		case item.Kind == yaml.MappingNode:
			r.longPort(name, item, iat)
		default:
			r.problem(iat, item, "is neither a port spec nor a mapping")
		}
	}
}

func (r *composeReader) networkMode(service string, n *yaml.Node, at path) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		r.problem(at, n, "must be a string")
		return
	}
	v, err := substitute(n.Value, r.env)
	if err != nil {
		r.problem(at, n, "%s", err.Error())
		return
	}
	if v == "host" {
		r.out.HostNetwork = append(r.out.HostNetwork, service)
	}
}

// shortPort reads "[IP:][HOST:]CONTAINER[/PROTO]", IPv6 in brackets.
func (r *composeReader) shortPort(service string, n *yaml.Node, at path) {
	spec, err := substitute(n.Value, r.env)
	if err != nil {
		r.problem(at, n, "%s", err.Error())
		return
	}
	proto := "tcp"
	if i := strings.LastIndexByte(spec, '/'); i >= 0 {
		spec, proto = spec[:i], spec[i+1:]
	}
	var ip, host, container string
	var ipGiven bool
	if strings.HasPrefix(spec, "[") {
		end := strings.IndexByte(spec, ']')
		if end < 0 || !strings.HasPrefix(spec[end+1:], ":") {
			r.problem(at, n, "has a [ without a closing ]: before the ports")
			return
		}
		ip, ipGiven = spec[1:end], true
		parts := strings.Split(spec[end+2:], ":")
		if len(parts) != 2 {
			r.problem(at, n, "must be [IPv6]:HOST:CONTAINER")
			return
		}
		host, container = parts[0], parts[1]
	} else {
		parts := strings.Split(spec, ":")
		switch len(parts) {
		case 1:
			container = parts[0]
		case 2:
			host, container = parts[0], parts[1]
		case 3:
			ip, ipGiven, host, container = parts[0], true, parts[1], parts[2]
		default:
			r.problem(at, n, "has too many ':' (an IPv6 host address must be in [brackets])")
			return
		}
	}
	r.publish(service, n, at, ip, ipGiven, host, container, proto)
}

func (r *composeReader) longPort(service string, n *yaml.Node, at path) {
	m, _ := r.mapping(n, at, 0)
	var target, published, hostIP string
	proto := "tcp"
	ipGiven := false
	read := func(key string) (string, bool) {
		v, ok := m[key]
		if !ok {
			return "", false
		}
		v = resolve(v)
		if v == nil || v.Kind != yaml.ScalarNode {
			r.problem(at.field(key), n, "must be a single value")
			return "", false
		}
		s, err := substitute(v.Value, r.env)
		if err != nil {
			r.problem(at.field(key), v, "%s", err.Error())
			return "", false
		}
		return s, true
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch k {
		case "target", "published", "host_ip", "protocol", "mode", "name", "app_protocol":
		default:
			r.problem(at.field(k), m[k], "is not a key of a compose port")
			return
		}
	}
	var ok bool
	if target, ok = read("target"); !ok {
		if _, given := m["target"]; !given {
			r.problem(at, n, "has no target port")
		}
		return
	}
	if _, given := m["published"]; given {
		if published, ok = read("published"); !ok {
			return
		}
	}
	if _, given := m["host_ip"]; given {
		if hostIP, ok = read("host_ip"); !ok {
			return
		}
		ipGiven = true
	}
	if _, given := m["protocol"]; given {
		if proto, ok = read("protocol"); !ok {
			return
		}
	}
	r.publish(service, n, at, hostIP, ipGiven, published, target, proto)
}

// publish checks one port mapping and adds a PublishedPort per host port.
func (r *composeReader) publish(service string, n *yaml.Node, at path, ip string, ipGiven bool, host, container, proto string) {
	switch proto {
	case "tcp", "udp", "sctp":
	default:
		r.problem(at, n, "has a protocol that is not tcp, udp or sctp")
		return
	}
	var hostIP string
	all := true
	if ipGiven && ip != "" {
		addr, err := netip.ParseAddr(ip)
		if err != nil || addr.Zone() != "" {
			r.problem(at, n, "has a host address that is not an IP address")
			return
		}
		hostIP, all = addr.String(), addr.IsUnspecified()
	}
	c1, c2, err := portRange(container)
	if err != nil {
		r.problem(at, n, "has a container port that %s", err.Error())
		return
	}
	add := func(hp, cp int) bool {
		if len(r.out.Ports) >= maxPublished {
			r.problem(at, n, "publishes more than %d ports in all; the rest are not read", maxPublished)
			return false
		}
		r.out.Ports = append(r.out.Ports, PublishedPort{Service: service, HostIP: hostIP, AllAddresses: all, HostPort: hp, ContainerPort: cp, Protocol: proto})
		return true
	}
	if host == "" {
		for cp := c1; cp <= c2; cp++ {
			if !add(0, cp) {
				return
			}
		}
		return
	}
	h1, h2, err := portRange(host)
	if err != nil {
		r.problem(at, n, "has a host port that %s", err.Error())
		return
	}
	switch {
	case h2-h1 == c2-c1:
		for i := 0; i <= h2-h1; i++ {
			if !add(h1+i, c1+i) {
				return
			}
		}
	case c1 == c2:
		r.problem(at, n, "publishes on one port of a host range, which docker picks at start; which one is not known")
	default:
		r.problem(at, n, "has host and container ranges of different lengths")
	}
}

// portRange reads "80" or "8000-8010".
func portRange(s string) (int, int, error) {
	lo, hi, isRange := strings.Cut(s, "-")
	a, err := portNumber(lo)
	if err != nil {
		return 0, 0, err
	}
	if !isRange {
		return a, a, nil
	}
	b, err := portNumber(hi)
	if err != nil {
		return 0, 0, err
	}
	if b < a {
		return 0, 0, errors.New("is a range that ends before it starts")
	}
	return a, b, nil
}

func portNumber(s string) (int, error) {
	if s == "" || len(s) > 5 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, errors.New("is not a port number")
	}
	v, _ := strconv.Atoi(s)
	if v < 1 || v > 65535 {
		return 0, errors.New("is not a port number from 1 to 65535")
	}
	return v, nil
}
