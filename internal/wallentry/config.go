// Package wallentry is the in-namespace entry: the first program a wall
// runs. It listens on the namespace's own loopback for the CONNECT proxy
// and for each listed loopback port, carries every connection to the
// spawn's relay over its unix socket, starts the add-on with fds 0, 1 and
// 2 only, passes signals on, and exits with the add-on's code.
//
// The entry decides nothing: the relay parses and judges every request.
// It runs as the add-on's own (same namespaces, same uid, same filter), so
// it holds nothing the add-on may not have: no token, no secret, no fd the
// add-on could not open itself.
package wallentry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"

	"github.com/addonwall/addonwall/internal/egress"
)

// DefaultProxyPort is where the CONNECT proxy listens unless a listed
// loopback port already holds it.
const DefaultProxyPort = 39080

// Limits on a config; past them it is refused, never truncated.
const (
	maxConfigBytes = 64 << 10
	maxForwards    = 256
)

// Config is what the entry reads from the file the wall binds for it. It
// holds no secret: every field is also visible to the add-on.
type Config struct {
	// RelaySocket is the relay's unix socket as the wall shows it.
	RelaySocket string `json:"relaySocket"`
	// ProxyPort is the CONNECT proxy's port on 127.0.0.1.
	ProxyPort int `json:"proxyPort"`
	// Forwards are the listed loopback ports; empty when none is listed.
	Forwards []Forward `json:"forwards,omitempty"`
	// DoorPort is the gateway's port on 127.0.0.1, listened on only for
	// an add-on with doors; 0 means none.
	DoorPort int `json:"doorPort,omitempty"`
	// DoorSocket is the spawn's door socket as the wall shows it. A door
	// connection's bytes go there unread: the host side checks the token,
	// the door and the request target.
	DoorSocket string `json:"doorSocket,omitempty"`
}

// Door is a wall's door: the gateway's port as the add-on dials it and
// the spawn's door socket. The zero Door is none.
type Door struct {
	Port   int
	Socket string
}

// Forward is one listed loopback port. Whatever a client of Listen sends
// goes to Target and nowhere else.
type Forward struct {
	// Listen is the loopback "addr:port" listened on inside the wall.
	Listen string `json:"listen"`
	// Target is the listed entry, spelled as the relay matches it.
	Target string `json:"target"`
	// Optional forwards are skipped when their address cannot be
	// listened on (::1 in a namespace without IPv6); every other listen
	// failure stops the entry.
	Optional bool `json:"optional,omitempty"`
}

// ParseConfig reads a config strictly: unknown keys, trailing data and
// out-of-range values are errors.
func ParseConfig(data []byte) (Config, error) {
	if len(data) > maxConfigBytes {
		return Config{}, fmt.Errorf("the entry's config is %d bytes, over %d", len(data), maxConfigBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("the entry's config: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("the entry's config has data after its object")
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	if len(c.Forwards) == 0 {
		c.Forwards = nil // "forwards": [] and no forwards are one config
	}
	return c, nil
}

// Marshal is the config as ParseConfig reads it. It validates first, so a
// config that would stop the entry is refused before a wall is built.
func (c Config) Marshal() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(c)
}

// Validate checks every field and the rules between them.
func (c Config) Validate() error {
	if err := validSocket("relaySocket", c.RelaySocket); err != nil {
		return err
	}
	if c.ProxyPort < 1 || c.ProxyPort > 65535 {
		return fmt.Errorf("the entry's config: proxyPort %d is not from 1 to 65535", c.ProxyPort)
	}
	if (c.DoorPort == 0) != (c.DoorSocket == "") {
		return fmt.Errorf("the entry's config: doorPort and doorSocket come together or not at all")
	}
	if c.DoorPort != 0 {
		if err := validSocket("doorSocket", c.DoorSocket); err != nil {
			return err
		}
		if c.DoorPort < 1 || c.DoorPort > 65535 || c.DoorPort == c.ProxyPort {
			return fmt.Errorf("the entry's config: doorPort %d is not from 1 to 65535 or holds the proxy's port", c.DoorPort)
		}
	}
	if len(c.Forwards) > maxForwards {
		return fmt.Errorf("the entry's config: %d forwards, over %d", len(c.Forwards), maxForwards)
	}
	seen := map[netip.AddrPort]bool{}
	for i, f := range c.Forwards {
		ap, err := netip.ParseAddrPort(f.Listen)
		if err != nil || ap.Addr().Zone() != "" || !ap.Addr().IsLoopback() || ap.Addr().Is4In6() || ap.Port() == 0 {
			return fmt.Errorf("the entry's config: forwards[%d].listen %q is not a loopback address with a port", i, f.Listen)
		}
		if int(ap.Port()) == c.ProxyPort {
			return fmt.Errorf("the entry's config: forwards[%d].listen %s holds the proxy's port", i, f.Listen)
		}
		if int(ap.Port()) == c.DoorPort {
			return fmt.Errorf("the entry's config: forwards[%d].listen %s holds the door's port", i, f.Listen)
		}
		if seen[ap] {
			return fmt.Errorf("the entry's config: forwards[%d].listen %s is listed twice", i, f.Listen)
		}
		seen[ap] = true
		l, err := egress.ParseListed(f.Target, true)
		if err != nil || l.PlainHTTP || l.String() != f.Target {
			return fmt.Errorf("the entry's config: forwards[%d].target %q is not a host:port in the relay's spelling", i, f.Target)
		}
	}
	return nil
}

func validSocket(key, path string) error {
	if path == "" || !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return fmt.Errorf("the entry's config: %s %q is not a clean absolute path", key, path)
	}
	if len(path) > 107 {
		return fmt.Errorf("the entry's config: %s is %d bytes, over the 107 a unix socket allows", key, len(path))
	}
	return nil
}

// ConfigFor is the config of a wall whose relay socket the wall shows at
// socket, whose rules are rules and whose door is door: one forwarder for
// each listed CONNECT entry on a loopback host, the door on the gateway's
// port, and the proxy on the first port from 39080 up that neither holds.
// skipped names the entries left without a forwarder: their loopback
// address and port is another entry's or the door's (the gateway's port is
// served over the doors only), or a port below 1024, which a wall without
// capabilities cannot listen on.
func ConfigFor(rules egress.Rules, socket string, door Door) (c Config, skipped []string) {
	c.RelaySocket = socket
	held := map[uint16]bool{}
	seen := map[string]bool{}
	if door.Port != 0 {
		c.DoorPort, c.DoorSocket = door.Port, door.Socket
		held[uint16(door.Port)] = true
	}
	for _, l := range rules.Listed {
		if l.PlainHTTP {
			continue
		}
		addrs, optional := listenAddrs(l.Host)
		if len(addrs) == 0 {
			continue
		}
		if l.Port < 1024 {
			// The wall holds no capability, and binding a port below
			// 1024 needs one.
			skipped = append(skipped, fmt.Sprintf("%s has no forwarder: a wall cannot listen on a port below 1024", l))
			continue
		}
		if door.Port != 0 && int(l.Port) == door.Port {
			skipped = append(skipped, fmt.Sprintf("%s has no forwarder: its port is the gateway's, served over the doors only", l))
			continue
		}
		clash := false
		for _, a := range addrs {
			if seen[netip.AddrPortFrom(a, l.Port).String()] {
				clash = true
			}
		}
		if clash {
			skipped = append(skipped, fmt.Sprintf("%s has no forwarder: its loopback port is already another listed entry's", l))
			continue
		}
		for i, a := range addrs {
			listen := netip.AddrPortFrom(a, l.Port).String()
			seen[listen] = true
			c.Forwards = append(c.Forwards, Forward{Listen: listen, Target: l.String(), Optional: optional[i]})
		}
		held[l.Port] = true
	}
	port := DefaultProxyPort
	for held[uint16(port)] && port < 65535 {
		port++
	}
	c.ProxyPort = port
	return c, skipped
}

// listenAddrs says where a listed host is listened on inside the wall: a
// loopback literal at itself, "localhost" at 127.0.0.1 and (when the
// namespace has IPv6) ::1. Any other host gets no forwarder: it is
// reached through the proxy.
func listenAddrs(host string) (addrs []netip.Addr, optional []bool) {
	if host == "localhost" {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}, []bool{false, true}
	}
	a, err := netip.ParseAddr(host)
	if err != nil || !a.IsLoopback() || a.Zone() != "" {
		return nil, nil
	}
	// An IPv6 loopback exists only where the namespace has IPv6.
	return []netip.Addr{a.Unmap()}, []bool{a.Is6() && !a.Is4In6()}
}
