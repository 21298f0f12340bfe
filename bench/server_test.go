package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/config"
)

// benchServerEnv carries a serverSpec (JSON) to a re-executed test binary,
// which then serves the bench server on stdio.
//
// The bench server is a hand-written NDJSON MCP server rather than the
// fixture, for three things the fixture cannot do: send a burst of
// notifications/tools/list_changed at a chosen rate (go-sdk debounces the
// ones AddTool sends), generate thousands of tools with realistic schemas
// (a spec in an environment variable is limited to 128 KiB), and return a
// result of N bytes.
const benchServerEnv = "MCP_SIDECAR_BENCH_SERVER"

// serverSpec configures a bench server.
type serverSpec struct {
	// Tools adds generated tools tool_0 .. tool_<N-1> whose input schemas
	// are 1, 2 or 3 KiB (cycling).
	Tools int `json:"tools,omitempty"`
}

// The bench server's fixed tools.
const (
	toolEcho  = "echo"  // answers "<n> bytes": the size of its arguments
	toolBlob  = "blob"  // {"bytes": N}: one text content of N bytes
	toolStorm = "storm" // {"count": N, "ms": M}: N list_changed spread over M ms, answers the final version
	toolStats = "stats" // {"lists": tools/list requests seen, "version": catalog version}
)

func benchServerConfig(name string, spec serverSpec) *config.ServerConfig {
	exe, err := filepath.Abs(os.Args[0])
	if err != nil {
		exe = os.Args[0]
	}
	b, _ := json.Marshal(spec) // plain ints: cannot fail
	return &config.ServerConfig{
		Name:    name,
		Source:  "bench",
		Command: exe,
		Args:    []string{"-test.run=^$"},
		Env:     map[string]string{benchServerEnv: string(b)},
	}
}

func benchServerMain() {
	v, ok := os.LookupEnv(benchServerEnv)
	if !ok {
		return
	}
	var spec serverSpec
	if err := json.Unmarshal([]byte(v), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "bench server: decoding %s: %v\n", benchServerEnv, err)
		os.Exit(1)
	}
	if err := serveBench(spec, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench server:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

type benchServer struct {
	generated []byte // the generated tools, rendered once, comma-separated

	wmu sync.Mutex
	w   io.Writer

	mu      sync.Mutex
	version int
	lists   int

	wg sync.WaitGroup
}

type inbound struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// serveBench serves until r ends. Requests are handled concurrently, as a
// real server does: a storm in progress must not hold up tools/list.
func serveBench(spec serverSpec, r io.Reader, w io.Writer) error {
	s := &benchServer{w: w}
	var gen bytes.Buffer
	for i := range spec.Tools {
		if i > 0 {
			gen.WriteByte(',')
		}
		gen.Write(generatedTool(i))
	}
	s.generated = gen.Bytes()
	br := bufio.NewReaderSize(r, 1<<20)
	defer s.wg.Wait()
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var msg inbound
			if jerr := json.Unmarshal(line, &msg); jerr != nil {
				return fmt.Errorf("reading a message: %w", jerr)
			}
			if len(msg.ID) > 0 {
				s.wg.Add(1)
				go func() {
					defer s.wg.Done()
					s.handle(&msg)
				}()
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// send writes one message line; result is raw JSON.
func (s *benchServer) reply(id json.RawMessage, result []byte) {
	var b bytes.Buffer
	b.Grow(len(result) + 64)
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	b.WriteString(`,"result":`)
	b.Write(result)
	b.WriteString("}\n")
	s.write(b.Bytes())
}

func (s *benchServer) write(line []byte) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, _ = s.w.Write(line) // a gone client ends the read loop too
}

func (s *benchServer) handle(msg *inbound) {
	switch msg.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		if p.ProtocolVersion == "" {
			p.ProtocolVersion = "2025-11-25"
		}
		s.reply(msg.ID, fmt.Appendf(nil, `{"protocolVersion":%q,"capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"bench","version":"1.0.0"}}`, p.ProtocolVersion))
	case "ping":
		s.reply(msg.ID, []byte(`{}`))
	case "tools/list":
		s.mu.Lock()
		s.lists++
		v := s.version
		s.mu.Unlock()
		var b bytes.Buffer
		b.Grow(len(s.generated) + 1024)
		b.WriteString(`{"tools":[`)
		for _, name := range []string{toolEcho, toolBlob, toolStorm, toolStats, "version_" + strconv.Itoa(v)} {
			fmt.Fprintf(&b, `{"name":%q,"inputSchema":{"type":"object"}},`, name)
		}
		b.Truncate(b.Len() - 1)
		if len(s.generated) > 0 {
			b.WriteByte(',')
			b.Write(s.generated)
		}
		b.WriteString(`]}`)
		s.reply(msg.ID, b.Bytes())
	case "tools/call":
		s.call(msg)
	default:
		m, _ := json.Marshal(fmt.Sprintf("method %q not found", msg.Method)) // a string: cannot fail
		s.write(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":%s}}`+"\n", msg.ID, m))
	}
}

func textResult(text string) []byte {
	b, _ := json.Marshal(text)
	return fmt.Appendf(nil, `{"content":[{"type":"text","text":%s}]}`, b)
}

func (s *benchServer) call(msg *inbound) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(msg.Params, &p); err != nil {
		s.reply(msg.ID, textResult("bad params: "+err.Error()))
		return
	}
	var a struct {
		Bytes int `json:"bytes"`
		Count int `json:"count"`
		Ms    int `json:"ms"`
	}
	switch p.Name {
	case toolEcho:
		s.reply(msg.ID, textResult(fmt.Sprintf("%d bytes", len(p.Arguments))))
	case toolBlob:
		_ = json.Unmarshal(p.Arguments, &a)
		var b bytes.Buffer
		b.Grow(a.Bytes + 64)
		b.WriteString(`{"content":[{"type":"text","text":"`)
		b.WriteString(strings.Repeat("x", max(a.Bytes, 0)))
		b.WriteString(`"}]}`)
		s.reply(msg.ID, b.Bytes())
	case toolStorm:
		_ = json.Unmarshal(p.Arguments, &a)
		start := time.Now()
		var v int
		for i := 1; i <= a.Count; i++ {
			s.mu.Lock()
			s.version++
			v = s.version
			s.mu.Unlock()
			s.write([]byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n"))
			if d := time.Until(start.Add(time.Duration(a.Ms) * time.Millisecond * time.Duration(i) / time.Duration(a.Count))); d > 0 {
				time.Sleep(d)
			}
		}
		s.reply(msg.ID, textResult(strconv.Itoa(v)))
	case toolStats:
		s.mu.Lock()
		st := fmt.Sprintf(`{"lists":%d,"version":%d}`, s.lists, s.version)
		s.mu.Unlock()
		b, _ := json.Marshal(st)
		s.reply(msg.ID, fmt.Appendf(nil, `{"content":[{"type":"text","text":%s}],"structuredContent":%s}`, b, st))
	default:
		s.reply(msg.ID, textResult("ok"))
	}
}

// generatedTool is tool_i with an input schema of 1, 2 or 3 KiB shaped like
// a real one: several typed properties with descriptions, an enum, a
// nested object, required and additionalProperties.
func generatedTool(i int) []byte {
	target := 1024 * (1 + i%3)
	const words = "Search the workspace for files whose path or contents match the query; results are ranked by relevance and recency. "
	head := `{"type":"object","properties":{"path":{"type":"string","description":"Directory to search, relative to the workspace root."},"query":{"type":"string","description":"`
	tail := `"},"limit":{"type":"integer","minimum":1,"maximum":1000,"default":50,"description":"Maximum number of results."},"mode":{"type":"string","enum":["fast","full","dry-run"],"default":"fast"},"options":{"type":"object","properties":{"recursive":{"type":"boolean","default":true},"include":{"type":"array","items":{"type":"string"},"description":"Glob patterns to include."}},"additionalProperties":false}},"required":["path","query"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`
	pad := max(target-len(head)-len(tail), 0)
	desc := strings.Repeat(words, pad/len(words)+1)[:pad]
	return fmt.Appendf(nil, `{"name":"tool_%d","title":"Tool %d","description":"Generated tool %d of the bench server.","inputSchema":%s%s%s,"annotations":{"readOnlyHint":true}}`, i, i, i, head, desc, tail)
}
