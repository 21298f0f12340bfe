package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// The inputs of VS Code files (${input:ID}, config.Input) are asked of
// the host (mcp/input) when a session that needs them opens, once each
// for as long as the sidecar runs, and kept in memory only
// (docs/protocol.md, "VS Code inputs").

// unaskedInputs makes invalid, in l, every server that uses an input
// when the host cannot be asked for one (it did not declare
// capabilities.inputs), with an error that names the input; the errors
// join l's, which initialize reports.
func unaskedInputs(l *config.Loaded, hostAsks bool) {
	if hostAsks {
		return
	}
	l.NoOneToAsk(func(in config.Input) string {
		return fmt.Sprintf("uses %s, and no one can be asked for it: the host did not declare capabilities.inputs (mcp/input), and the commands for people ask only on a terminal", in.Describe())
	})
}

// inputStore holds the values of the inputs given so far, by
// config.Input.Key, and the questions in flight: one question per input
// at a time, which every session that needs it waits for.
type inputStore struct {
	mu     sync.Mutex
	values map[string]string
	asks   map[string]*inputAsk
}

type inputAsk struct {
	done  chan struct{}
	value string
	err   error
}

// value is the value of in, asking with ask when no one has given one
// yet. A question that failed is not remembered: the next caller asks
// again, and so does a waiter whose question ended with its asker's
// cancelled request.
func (st *inputStore) value(ctx context.Context, in config.Input, ask func(context.Context) (string, error)) (string, error) {
	key := in.Key()
	for {
		st.mu.Lock()
		if v, ok := st.values[key]; ok {
			st.mu.Unlock()
			return v, nil
		}
		a, waiting := st.asks[key]
		if !waiting {
			a = &inputAsk{done: make(chan struct{})}
			if st.asks == nil {
				st.asks = map[string]*inputAsk{}
			}
			st.asks[key] = a
		}
		st.mu.Unlock()
		if !waiting {
			a.value, a.err = ask(ctx)
			st.mu.Lock()
			delete(st.asks, key)
			if a.err == nil {
				if st.values == nil {
					st.values = map[string]string{}
				}
				st.values[key] = a.value
			}
			st.mu.Unlock()
			close(a.done)
			return a.value, a.err
		}
		select {
		case <-a.done:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		if a.err == nil {
			return a.value, nil
		}
		if !errors.Is(a.err, context.Canceled) && !errors.Is(a.err, context.DeadlineExceeded) {
			return "", a.err
		}
		// The asker's request ended; this one asks in its turn.
	}
}

// of is the values of c's inputs given so far, for its scrubber.
func (st *inputStore) of(c *config.ServerConfig) []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return c.InputValues(st.values)
}

// giveInputs is the definition each of names (the servers of session id
// being opened) starts with when it uses inputs: with their values, asked
// of the host where no one gave them yet, one at a time; or, when one
// was not given (cancelled, refused) or the values make it invalid, with
// that problem (the server is invalid in this session, and the next
// session asks again). Servers without inputs are not in the result. An
// error is ctx's: the session is not opened.
func (s *Server) giveInputs(ctx context.Context, env *environment, id string, names []string) (map[string]*config.ServerConfig, error) {
	out := map[string]*config.ServerConfig{}
	// An input not given is asked once per session/open, whichever of its
	// servers comes next.
	failed := map[string]error{}
	for _, name := range names {
		c := env.servers[name]
		if len(c.Inputs) == 0 || !c.Valid() || !c.IsEnabled() {
			continue
		}
		values := map[string]string{}
		var problems config.Errors
		for _, in := range c.Inputs {
			err, v := failed[in.Key()], ""
			if err == nil {
				v, err = env.inputs.value(ctx, in, func(ctx context.Context) (string, error) { return s.askInput(ctx, id, name, in) })
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if err != nil {
				// The server does not start: its other inputs are not asked
				// for it.
				failed[in.Key()] = err
				problems = append(problems, &config.Error{File: c.Source, Server: name, Key: "inputs", Message: err.Error()})
				break
			}
			values[in.Key()] = v
		}
		if len(problems) == 0 {
			resolved, errs := c.WithInputs(values)
			if len(errs) == 0 {
				out[name] = resolved
				continue
			}
			problems = errs
		}
		cp := *c
		cp.Problems = problems
		out[name] = &cp
		s.logger.Info("server not started in this session: its inputs were not given", "session", id, "server", name, "problem", problems.Error())
	}
	return out, nil
}

// askInput asks the host for in, on behalf of server of session id. The
// errors say, for people, why there is no value; none quotes the host's
// answer, which may hold it.
func (s *Server) askInput(ctx context.Context, id, server string, in config.Input) (string, error) {
	raw, err := s.callHost(ctx, protocol.RequestInput, protocol.InputParams{
		SessionID: id, Server: server, ID: in.ID, Source: in.File,
		Description: in.Description, Password: in.Password, Default: in.Default,
	})
	what := in.Describe()
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		var pe *protocol.Error
		if errors.As(err, &pe) {
			return "", fmt.Errorf("%s was not given: the host answered mcp/input with an error (%s); the next session/open asks again", what, pe.Message)
		}
		return "", fmt.Errorf("%s was not given: %w", what, err)
	}
	var r protocol.InputResult
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	switch err := dec.Decode(&r); {
	case err != nil, r.Value == nil && !r.Cancelled, r.Value != nil && r.Cancelled:
		return "", fmt.Errorf("%s was not given: the host's answer to mcp/input is not {value} or {cancelled: true}; the next session/open asks again", what)
	case r.Cancelled:
		return "", fmt.Errorf("%s was not given: the user cancelled it; the next session/open asks again", what)
	}
	return *r.Value, nil
}
