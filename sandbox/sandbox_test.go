package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func TestDetectCapability(t *testing.T) {
	tests := []struct {
		name         string
		experimental map[string]json.RawMessage
		want         Capability
	}{
		{"preferred", map[string]json.RawMessage{KeyState: raw(`{}`)}, CapPreferred},
		{"deprecated", map[string]json.RawMessage{KeyStateMeta: raw(`{}`)}, CapDeprecated},
		{"both", map[string]json.RawMessage{KeyState: raw(`{}`), KeyStateMeta: raw(`{"v":1}`)}, CapBoth},
		{"none", map[string]json.RawMessage{"codex/tool-catalog-cache": raw(`{"cacheable":false}`)}, CapNone},
		{"nil map", nil, CapNone},
		{"true counts", map[string]json.RawMessage{KeyState: raw(`true`)}, CapPreferred},
		{"null is not advertising", map[string]json.RawMessage{KeyState: raw(`null`)}, CapNone},
		{"false is declining", map[string]json.RawMessage{KeyState: raw(` false `), KeyStateMeta: raw(`{}`)}, CapDeprecated},
		{"launcher key is not a capability", map[string]json.RawMessage{KeyLauncher: raw(`{}`)}, CapNone},
		{"case matters", map[string]json.RawMessage{"Codex/Sandbox-State": raw(`{}`)}, CapNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DetectCapability(tt.experimental); got != tt.want {
				t.Errorf("DetectCapability = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestOptInValues: what a server's experimental["codex/sandbox-state"]
// value must be to opt in: an object (any members) or true; every other
// value, the ones that read as "no" included, is not opting in.
func TestOptInValues(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  bool
	}{
		{`{}`, true},
		{` { } `, true},
		{`{"version":1}`, true},
		{`{"enabled":false}`, true}, // an object: its members are not read
		{`true`, true},
		{`false`, false},
		{`null`, false},
		{`0`, false},
		{`1`, false},
		{`"no"`, false},
		{`"yes"`, false},
		{`""`, false},
		{`[]`, false},
		{`[{}]`, false},
		{`{`, false},
	} {
		t.Run(tt.value, func(t *testing.T) {
			got := DetectCapability(map[string]json.RawMessage{KeyState: raw(tt.value)})
			if got.OptedIn() != tt.want {
				t.Errorf("value %s: opted in = %v (%v), want %v", tt.value, got.OptedIn(), got, tt.want)
			}
			got = DetectCapability(map[string]json.RawMessage{KeyStateMeta: raw(tt.value)})
			if got.OptedIn() != tt.want {
				t.Errorf("deprecated key, value %s: opted in = %v, want %v", tt.value, got.OptedIn(), tt.want)
			}
		})
	}
}

func TestDetectCapabilityFromInitialize(t *testing.T) {
	tests := []struct {
		name    string
		result  string
		want    Capability
		wantErr bool
	}{
		{"preferred", `{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"experimental":{"codex/sandbox-state":{}}},"serverInfo":{"name":"s","version":"1"}}`, CapPreferred, false},
		{"deprecated", `{"capabilities":{"experimental":{"codex/sandbox-state-meta":{"x":12345678901234567890}}}}`, CapDeprecated, false},
		{"both", `{"capabilities":{"experimental":{"codex/sandbox-state-meta":{},"codex/sandbox-state":{}}}}`, CapBoth, false},
		{"none", `{"capabilities":{"experimental":{"other":{}}}}`, CapNone, false},
		{"no experimental", `{"capabilities":{"tools":{}}}`, CapNone, false},
		{"null experimental", `{"capabilities":{"experimental":null}}`, CapNone, false},
		{"no capabilities", `{"protocolVersion":"2025-11-25"}`, CapNone, false},
		{"not JSON", `{"capabilities":`, CapNone, true},
		{"experimental not an object", `{"capabilities":{"experimental":[1]}}`, CapNone, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DetectCapabilityFromInitialize(raw(tt.result))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("DetectCapabilityFromInitialize = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCapabilityString(t *testing.T) {
	got := []string{CapNone.String(), CapPreferred.String(), CapDeprecated.String(), CapBoth.String(), Capability(9).String()}
	want := []string{"none", "preferred", "deprecated", "both", "Capability(9)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("String mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{KeyState, KeyStateMeta}, CapBoth.Advertised()); diff != "" {
		t.Errorf("Advertised mismatch (-want +got):\n%s", diff)
	}
}

func TestValidateState(t *testing.T) {
	tests := []struct {
		state string
		ok    bool
	}{
		{``, true},
		{`null`, true},
		{`{"a":1}`, true},
		{` [1, 2] `, true},
		{`"just a string"`, true},
		{`12345678901234567890`, true},
		{`{"a":1} {"b":2}`, false},
		{`{"a":1}x`, false},
		{`{"a":`, false},
		{`{'a':1}`, false},
		{"\"\xff\"", false},
	}
	for _, tt := range tests {
		err := ValidateState(raw(tt.state))
		if (err == nil) != tt.ok {
			t.Errorf("ValidateState(%q) = %v, want ok=%v", tt.state, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidState) {
			t.Errorf("ValidateState(%q) = %v, not ErrInvalidState", tt.state, err)
		}
	}
}

// metaBytes renders BuildMeta's values for comparison; a non-RawMessage
// value would show up as a type mismatch.
func metaBytes(t *testing.T, meta map[string]any) map[string]string {
	t.Helper()
	if meta == nil {
		return nil
	}
	out := make(map[string]string, len(meta))
	for k, v := range meta {
		r, ok := v.(json.RawMessage)
		if !ok {
			t.Fatalf("meta[%q] is %T, want json.RawMessage", k, v)
		}
		out[k] = string(r)
	}
	return out
}

func TestBuildMeta(t *testing.T) {
	const policy = `{"sandbox":"workspace-write","big":12345678901234567890}`
	const launcher = `{"codexExecutable":"/opt/codex/bin/codex"}`
	tests := []struct {
		name        string
		in          Injection
		want        map[string]string
		wantDropped []string
	}{
		{
			name: "preferred, stdio, verified launcher",
			in:   Injection{Capability: CapPreferred, State: raw(policy), Launcher: "/opt/codex/bin/codex", Transport: TransportStdio},
			want: map[string]string{KeyState: policy, KeyStateMeta: policy, KeyLauncher: launcher},
		},
		{
			name: "deprecated capability still gets both keys",
			in:   Injection{Capability: CapDeprecated, State: raw(policy), Transport: TransportStdio},
			want: map[string]string{KeyState: policy, KeyStateMeta: policy},
		},
		{
			name: "both",
			in:   Injection{Capability: CapBoth, State: raw(policy), Transport: TransportStdio},
			want: map[string]string{KeyState: policy, KeyStateMeta: policy},
		},
		{
			name: "not opted in gets nothing, whatever the host sends",
			in: Injection{Capability: CapNone, State: raw(policy), Launcher: "/opt/codex/bin/codex", Transport: TransportStdio,
				HostMeta: map[string]json.RawMessage{"progressToken": raw(`7`), KeyState: raw(`{}`), KeyLauncher: raw(`{"codexExecutable":"/evil"}`)}},
			want:        map[string]string{"progressToken": `7`},
			wantDropped: []string{KeyLauncher, KeyState},
		},
		{
			name: "no sandboxState: no keys, even with a launcher",
			in:   Injection{Capability: CapPreferred, Launcher: "/opt/codex/bin/codex", Transport: TransportStdio},
			want: nil,
		},
		{
			name: "null sandboxState is no sandboxState",
			in:   Injection{Capability: CapPreferred, State: raw(`null`), Launcher: "/opt/codex/bin/codex", Transport: TransportStdio},
			want: nil,
		},
		{
			name: "invalid sandboxState adds nothing",
			in:   Injection{Capability: CapPreferred, State: raw(`{"a":`), Transport: TransportStdio},
			want: nil,
		},
		{
			name: "HTTP server gets the state but no launcher",
			in:   Injection{Capability: CapPreferred, State: raw(policy), Launcher: "/opt/codex/bin/codex", Transport: TransportHTTP},
			want: map[string]string{KeyState: policy, KeyStateMeta: policy},
		},
		{
			name: "unknown transport gets no launcher",
			in:   Injection{Capability: CapPreferred, State: raw(policy), Launcher: "/opt/codex/bin/codex"},
			want: map[string]string{KeyState: policy, KeyStateMeta: policy},
		},
		{
			name: "relative launcher is never sent",
			in:   Injection{Capability: CapPreferred, State: raw(policy), Launcher: "codex", Transport: TransportStdio},
			want: map[string]string{KeyState: policy, KeyStateMeta: policy},
		},
		{
			name: "non-UTF-8 launcher is never sent",
			in:   Injection{Capability: CapPreferred, State: raw(policy), Launcher: "/opt/\xff/codex", Transport: TransportStdio},
			want: map[string]string{KeyState: policy, KeyStateMeta: policy},
		},
		{
			name: "launcher path keeps <&> and é",
			in:   Injection{Capability: CapPreferred, State: raw(`{}`), Launcher: "/opt/é <&>/codex", Transport: TransportStdio},
			want: map[string]string{KeyState: `{}`, KeyStateMeta: `{}`, KeyLauncher: `{"codexExecutable":"/opt/é <&>/codex"}`},
		},
		{
			name: "host meta merged, sandbox keys dropped",
			in: Injection{Capability: CapPreferred, State: raw(policy), Launcher: "/opt/codex/bin/codex", Transport: TransportStdio,
				HostMeta: map[string]json.RawMessage{
					"progressToken": raw(`"tok-1"`),
					"traceparent":   raw(`"00-abc-def-01"`),
					"threadId":      raw(`"t1"`),
					KeyState:        raw(`{"sandbox":"danger-full-access"}`),
					KeyStateMeta:    raw(`{"sandbox":"danger-full-access"}`),
					KeyLauncher:     raw(`{"codexExecutable":"/tmp/evil"}`),
				}},
			want: map[string]string{
				"progressToken": `"tok-1"`, "traceparent": `"00-abc-def-01"`, "threadId": `"t1"`,
				KeyState: policy, KeyStateMeta: policy, KeyLauncher: launcher,
			},
			wantDropped: []string{KeyLauncher, KeyState, KeyStateMeta},
		},
		{
			name: "host meta that is not JSON is dropped",
			in: Injection{Capability: CapNone,
				HostMeta: map[string]json.RawMessage{"bad": raw(`{`), "empty": nil, "ok": raw(`[1]`)}},
			want:        map[string]string{"ok": `[1]`},
			wantDropped: []string{"bad", "empty"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			meta, dropped := BuildMeta(tt.in)
			if diff := cmp.Diff(tt.want, metaBytes(t, meta)); diff != "" {
				t.Errorf("meta mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDropped, dropped); diff != "" {
				t.Errorf("dropped mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBuildMetaOwnsItsBytes checks that a later change to the caller's
// buffers cannot alter a built _meta, and that the two state keys do not
// share one slice.
func TestBuildMetaOwnsItsBytes(t *testing.T) {
	state := []byte(`{"a":1}`)
	host := []byte(`"tok"`)
	meta, _ := BuildMeta(Injection{Capability: CapPreferred, State: state, HostMeta: map[string]json.RawMessage{"progressToken": host}})
	copy(state, `{"b":2}`)
	copy(host, `"xyz"`)
	meta[KeyState].(json.RawMessage)[2] = 'z'
	if got := string(meta[KeyStateMeta].(json.RawMessage)); got != `{"a":1}` {
		t.Errorf("%s = %s, want {\"a\":1}", KeyStateMeta, got)
	}
	if got := string(meta["progressToken"].(json.RawMessage)); got != `"tok"` {
		t.Errorf("progressToken = %s, want \"tok\"", got)
	}
}

// TestBuildMetaCarriesNothing: a call without state after a call with
// state gets no sandbox keys.
func TestBuildMetaCarriesNothing(t *testing.T) {
	first, _ := BuildMeta(Injection{Capability: CapPreferred, State: raw(`{"a":1}`), Launcher: "/bin/codex", Transport: TransportStdio})
	if len(first) != 3 {
		t.Fatalf("first call meta = %v, want three keys", metaBytes(t, first))
	}
	second, _ := BuildMeta(Injection{Capability: CapPreferred, Launcher: "/bin/codex", Transport: TransportStdio})
	if second != nil {
		t.Errorf("second call meta = %v, want none", metaBytes(t, second))
	}
}

func TestLauncherValue(t *testing.T) {
	v, ok := LauncherValue("/usr/local/bin/codex", TransportStdio)
	if !ok || !bytes.Equal(v, []byte(`{"codexExecutable":"/usr/local/bin/codex"}`)) {
		t.Errorf("LauncherValue = %s, %v", v, ok)
	}
	for _, tt := range []struct{ path, transport string }{
		{"/usr/local/bin/codex", TransportHTTP},
		{"", TransportStdio},
		{"./codex", TransportStdio},
	} {
		if v, ok := LauncherValue(tt.path, tt.transport); ok {
			t.Errorf("LauncherValue(%q, %q) = %s, want none", tt.path, tt.transport, v)
		}
	}
}

func TestHostMetaCannotSetSandboxKeys(t *testing.T) {
	const hostValue = `{"sandbox":"danger-full-access","codexExecutable":"/tmp/evil"}`
	for _, key := range []string{KeyState, KeyStateMeta, KeyLauncher} {
		for _, capability := range []Capability{CapNone, CapPreferred, CapDeprecated, CapBoth} {
			for _, state := range []string{"", `{"sandbox":"read-only"}`} {
				t.Run(fmt.Sprintf("%s/%v/state=%v", key, capability, state != ""), func(t *testing.T) {
					meta, dropped := BuildMeta(Injection{
						Capability: capability, State: raw(state), Launcher: "/opt/codex", Transport: TransportStdio,
						HostMeta: map[string]json.RawMessage{key: raw(hostValue), "progressToken": raw(`1`)},
					})
					got := metaBytes(t, meta)
					for k, v := range got {
						if v == hostValue {
							t.Errorf("meta[%q] carries the host's value", k)
						}
					}
					if diff := cmp.Diff([]string{key}, dropped); diff != "" {
						t.Errorf("dropped (-want +got):\n%s", diff)
					}
					want := map[string]string{"progressToken": `1`}
					if capability.OptedIn() && state != "" {
						want[KeyState] = state
						want[KeyStateMeta] = state
						want[KeyLauncher] = `{"codexExecutable":"/opt/codex"}`
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("meta (-want +got):\n%s", diff)
					}
				})
			}
		}
	}
}
