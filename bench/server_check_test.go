package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
)

// The measurements are only as good as the bench server: these check that
// it serves what bench/README.md says it does.

func TestGeneratedSchemaSizes(t *testing.T) {
	for i := range 6 {
		var tool struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if err := json.Unmarshal(generatedTool(i), &tool); err != nil {
			t.Fatalf("tool %d: %v", i, err)
		}
		want := 1024 * (1 + i%3)
		if n := len(tool.InputSchema); n < want || n > want+64 {
			t.Errorf("tool %d: input schema of %d bytes, want about %d", i, n, want)
		}
		if tool.Name != fmt.Sprintf("tool_%d", i) {
			t.Errorf("tool %d named %q", i, tool.Name)
		}
	}
}

func TestBenchServerStormAndList(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- serveBench(serverSpec{Tools: 3}, inR, outW); outW.Close() }()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// The storm's notifications all come before its response.
	send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"storm","arguments":{"count":5,"ms":5}}}`)
	notes := 0
	for lines.Scan() {
		if strings.Contains(lines.Text(), `"notifications/tools/list_changed"`) {
			notes++
			continue
		}
		if !strings.Contains(lines.Text(), `"text":"5"`) {
			t.Fatalf("storm answered %s, want version 5", lines.Text())
		}
		break
	}
	if notes != 5 {
		t.Errorf("storm sent %d notifications, want 5", notes)
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if !lines.Scan() {
		t.Fatal(lines.Err())
	}
	var res struct {
		Result struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(lines.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Result.Tools {
		names = append(names, tl.Name)
	}
	if got, want := strings.Join(names, ","), "echo,blob,storm,stats,version_5,tool_0,tool_1,tool_2"; got != want {
		t.Errorf("tools/list = %s, want %s", got, want)
	}
	// A method it does not know (server/discover, the 2026-07-28
	// handshake's probe) gets a JSON-RPC error a client can read, so the
	// client falls back to initialize at once instead of waiting out its
	// probe.
	send(`{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{}}`)
	if !lines.Scan() {
		t.Fatal(lines.Err())
	}
	var unknown struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(lines.Bytes(), &unknown); err != nil {
		t.Fatalf("server/discover answered %s: %v", lines.Bytes(), err)
	}
	if unknown.ID != 3 || unknown.Error.Code != -32601 || !strings.Contains(unknown.Error.Message, `"server/discover"`) {
		t.Errorf("server/discover answered %s, want error -32601 naming the method", lines.Bytes())
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Error(err)
	}
}
