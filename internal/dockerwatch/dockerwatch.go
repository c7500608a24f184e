// Package dockerwatch talks to the Docker engine with the official Go
// client: whether it answers, which containers publish which host ports
// under which compose project, and a watch on container events that turns
// them into hints. No docker is a state, not an error.
package dockerwatch

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
)

// ProjectLabel is the compose project label docker compose sets.
const ProjectLabel = "com.docker.compose.project"

// Engine is a connection to the Docker engine. The zero value is not
// usable; use New.
type Engine struct {
	c    *client.Client
	live atomic.Bool
}

// New connects lazily, from DOCKER_HOST and friends; the client negotiates
// the API version down to older engines such as Debian's.
func New() (*Engine, error) {
	c, err := client.New(client.FromEnv)
	if err != nil {
		return nil, fmt.Errorf("making the docker client (docker is treated as unreachable): %w", err)
	}
	return &Engine{c: c}, nil
}

// Close releases the client.
func (e *Engine) Close() error { return e.c.Close() }

// Version returns the engine's version, or an error when it does not answer.
func (e *Engine) Version(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	v, err := e.c.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return "", fmt.Errorf("docker does not answer: %w", err)
	}
	return v.Version, nil
}

// Live reports whether the event watch is connected now.
func (e *Engine) Live() bool { return e.live.Load() }

// Published is a host port a running container publishes.
type Published struct {
	ContainerID string
	// Project is the compose project label, empty when unlabelled.
	Project string
	// HostIP is the address it is published on ("" or 0.0.0.0 for all).
	HostIP   string
	HostPort uint16
	Protocol string
	// WorkingDir is compose's working-dir label, empty when unlabelled.
	WorkingDir string
}

// PublishedPorts lists every host port published by a running container.
func (e *Engine) PublishedPorts(ctx context.Context) ([]Published, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	l, err := e.c.ContainerList(ctx, client.ContainerListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	var out []Published
	for _, c := range l.Items {
		for _, p := range c.Ports {
			if p.PublicPort == 0 {
				continue
			}
			hostIP := ""
			if p.IP.IsValid() {
				hostIP = p.IP.String()
			}
			out = append(out, Published{
				ContainerID: c.ID,
				Project:     c.Labels[ProjectLabel],
				HostIP:      hostIP,
				HostPort:    p.PublicPort,
				Protocol:    p.Type,
				WorkingDir:  c.Labels["com.docker.compose.project.working_dir"],
			})
		}
	}
	return out, nil
}

// Watch calls hint with the compose project of every container that
// starts, stops or dies, and state whenever the watch goes live or down,
// until ctx ends. A lost stream is reopened with backoff.
func (e *Engine) Watch(ctx context.Context, log logr.Logger, hint func(project string), state func(live bool)) {
	backoff := time.Second
	for ctx.Err() == nil {
		err := e.watchOnce(ctx, hint, state)
		if ctx.Err() != nil {
			return
		}
		if e.live.Swap(false) {
			state(false)
		}
		log.V(1).Info("docker event watch is down; retrying", "in", backoff.String(), "error", errString(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		if backoff < time.Minute {
			backoff *= 2
		}
	}
}

func (e *Engine) watchOnce(ctx context.Context, hint func(string), state func(bool)) error {
	if _, err := e.Version(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := client.Filters{}
	f = f.Add("type", string(events.ContainerEventType))
	for _, a := range []string{"start", "stop", "die"} {
		f = f.Add("event", a)
	}
	res := e.c.Events(ctx, client.EventsListOptions{Filters: f})
	e.live.Store(true)
	state(true)
	// Containers may have changed while the watch was down.
	hint("")
	for {
		select {
		case m, ok := <-res.Messages:
			if !ok {
				return errors.New("the event stream closed")
			}
			hint(m.Actor.Attributes[ProjectLabel])
		case err := <-res.Err:
			return err
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
