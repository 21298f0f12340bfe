package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// BenchmarkReplyFrame writes a reply around a raw result of 1 KiB and of
// 1 MiB of valid UTF-8: the cost of a frame to the host, the UTF-8 check
// included. "ascii" is English-like text with a non-ASCII rune every
// 200 bytes or so, "dense" has three in every 52 bytes (the slow case of
// utf8.Valid: it checks 8 ASCII bytes at once, other runes one by one).
// "discard" writes to io.Discard (the frame's own cost alone); "pipe" to
// an OS pipe that a goroutine drains, as the host's stdout is.
func BenchmarkReplyFrame(b *testing.B) {
	texts := []struct{ name, unit string }{
		{"ascii", strings.Repeat("The quick brown fox jumps over the lazy dog. ", 4) + "Café. "},
		{"dense", "abcdefghijklmnopqrstuvwxyz0123456789 héllo wörld ✓ "},
	}
	for _, size := range []struct {
		name string
		n    int
	}{{"1KiB", 1 << 10}, {"1MiB", 1 << 20}} {
		for _, tx := range texts {
			text := strings.ToValidUTF8(strings.Repeat(tx.unit, size.n/len(tx.unit)+1)[:size.n-64], "")
			enc, _ := json.Marshal(text)
			result := json.RawMessage(`{"content":[{"type":"text","text":` + string(enc) + `}],"isError":false}`)
			for _, sink := range []string{"discard", "pipe"} {
				b.Run(size.name+"/"+tx.name+"/"+sink, func(b *testing.B) {
					var w io.Writer = io.Discard
					if sink == "pipe" {
						r, pw, err := os.Pipe()
						if err != nil {
							b.Fatal(err)
						}
						drained := make(chan struct{})
						go func() { io.Copy(io.Discard, r); close(drained) }()
						defer func() { pw.Close(); <-drained; r.Close() }()
						w = pw
					}
					c := NewConn(strings.NewReader(""), w, ConnOptions{})
					b.SetBytes(int64(len(result)))
					b.ReportAllocs()
					for b.Loop() {
						c.trackForTest("42")
						if err := c.Reply(json.RawMessage("42"), result); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// TestAppendValidUTF8: each byte that does not start a valid UTF-8
// sequence becomes U+FFFD, as Go's own decoding of a string does (and
// encoding/json's); valid text, a U+FFFD the text held, and ASCII around
// the replacements (quotes, backslashes, escapes) stay as they are.
func TestAppendValidUTF8(t *testing.T) {
	const r = "\uFFFD"
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"plain ascii", "plain ascii"},
		{"héllo ✓ 日本 🙂", "héllo ✓ 日本 🙂"},
		{"already " + r, "already " + r},
		{"\xff", r},
		{"a\xffb", "a" + r + "b"},
		{"\xc0\xaf", r + r},                               // overlong "/"
		{"\xed\xa0\x80", r + r + r},                       // a surrogate encoded as UTF-8
		{"\xf4\x90\x80\x80", r + r + r + r},               // above U+10FFFF
		{"\"\xe2\x82\"", "\"" + r + r + "\""},             // cut short before the quote: the quote stays
		{"\"\\\\\xe2\"", "\"\\\\" + r + "\""},             // an escaped backslash, then an invalid byte
		{"\"\\u00e9\xff\\n\"", "\"\\u00e9" + r + "\\n\""}, // escapes around it
		{"é\x80é", "é" + r + "é"},                         // a stray continuation byte between runes
		{"\xe2\x82\xac\xe2\x82", "€" + r + r},             // a whole sequence, then a cut one
	} {
		got := string(appendValidUTF8([]byte("prefix:"), []byte(tt.in)))
		if got != "prefix:"+tt.want {
			t.Errorf("appendValidUTF8(%q) = %q, want %q", tt.in, got, "prefix:"+tt.want)
		}
	}
	// Every byte string of up to 3 bytes from an alphabet of boundary
	// bytes: the same as Go's decoding of it.
	alphabet := []byte{'"', '\\', 'a', 0x7f, 0x80, 0xbf, 0xc0, 0xc2, 0xdf, 0xe0, 0xe2, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff}
	var in []byte
	var walk func(depth int)
	walk = func(depth int) {
		got := appendValidUTF8(nil, in)
		if want := string([]rune(string(in))); string(got) != want || !utf8.Valid(got) {
			t.Errorf("appendValidUTF8(%q) = %q, want %q", in, got, want)
		}
		if depth == 3 {
			return
		}
		for _, c := range alphabet {
			in = append(in, c)
			walk(depth + 1)
			in = in[:len(in)-1]
		}
	}
	walk(0)
}

// TestFramesAreValidUTF8: every frame the Conn writes is valid UTF-8, its
// Content-Length that of the repaired body, whatever path it takes: a
// small reply (copied into a frame buffer), a large raw result (written
// without a copy), a notification, a call and an error.
func TestFramesAreValidUTF8(t *testing.T) {
	const bad = "\xff\xe2\x82"
	want := "x" + strings.Repeat("\uFFFD", len(bad)) + "y"
	small := json.RawMessage(`{"text":"x` + bad + `y"}`)
	large := json.RawMessage(`{"pad":"` + strings.Repeat("p", rawWriteThreshold) + `","text":"x` + bad + `y"}`)
	var out bytes.Buffer
	c := NewConn(strings.NewReader(""), &out, ConnOptions{})
	for _, id := range []string{"1", "2", "3"} {
		c.trackForTest(id)
	}
	if err := c.Reply(json.RawMessage("1"), small); err != nil {
		t.Fatal(err)
	}
	if err := c.Reply(json.RawMessage("2"), large); err != nil {
		t.Fatal(err)
	}
	if err := c.Notify("note", json.RawMessage(`{"text":"x`+bad+`y"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Dispatch("ask", json.RawMessage(`{"text":"x`+bad+`y"}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.ReplyError(json.RawMessage("3"), NewError(CodeInternalError, KindInternal, "x"+bad+"y")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(&out)
	var texts []string
	for {
		body, err := readStrictFrame(br)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("frame %d: %v", len(texts), err)
		}
		if !utf8.Valid(body) {
			t.Errorf("frame %d is not UTF-8: %.100q", len(texts), body)
		}
		var m struct {
			Result, Params struct{ Text string }
			Error          struct{ Message string }
		}
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, m.Result.Text+m.Params.Text+m.Error.Message)
	}
	if diff := cmp.Diff([]string{want, want, want, want, want}, texts); diff != "" {
		t.Errorf("texts (-want +got):\n%s", diff)
	}
}

// TestRawFrameRepairedWhole: a frame given in parts is repaired as one
// body, so that a valid sequence across two parts stays whole.
func TestRawFrameRepairedWhole(t *testing.T) {
	var out bytes.Buffer
	fw := newFrameWriter(&out)
	if err := fw.writeRaw([]byte("{\"a\":\"\xe2"), []byte("\x82\xac\xff\""), []byte("}")); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), frameOf("{\"a\":\"€\uFFFD\"}"); got != want {
		t.Errorf("written %q, want %q", got, want)
	}
}

// TestLoneSurrogates: a \u escape of a surrogate that is not half of a
// pair becomes \ufffd; pairs, other escapes and escaped backslashes stay.
func TestLoneSurrogates(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`"plain"`, `"plain"`},
		{`"\ud83d\ude00"`, `"\ud83d\ude00"`},               // a pair
		{`"\uD83D\uDE00 \u00e9"`, `"\uD83D\uDE00 \u00e9"`}, // upper case, and no surrogate
		{`"\ud83d"`, `"\ufffd"`},                           // a high one at the end
		{`"a\ud83db"`, `"a\ufffdb"`},                       // followed by no escape
		{`"\ud83d\u0041"`, `"\ufffd\u0041"`},               // followed by another escape
		{`"\ud83d\ud83d\ude00"`, `"\ufffd\ud83d\ude00"`},   // a high one, then a pair
		{`"\ude00"`, `"\ufffd"`},                           // a low one alone
		{`"\ude00\ud83d"`, `"\ufffd\ufffd"`},               // the wrong order
		{`"\\ud83d"`, `"\\ud83d"`},                         // an escaped backslash: text
		{`"\\\ud83d"`, `"\\\ufffd"`},                       // an escaped backslash, then an escape
		{`"\ud83d\n"`, `"\ufffd\n"`},
		{`"\u12"`, `"\u12"`}, // not JSON; left alone
	} {
		b := []byte(tt.in)
		found := loneSurrogates(b, true)
		if string(b) != tt.want || found != (tt.in != tt.want) {
			t.Errorf("loneSurrogates(%s) = %s, %v; want %s", tt.in, b, found, tt.want)
		}
	}
}

// TestFramesHaveNoLoneSurrogates: what a server wrote with a lone
// surrogate escape reaches the peer with \ufffd in its place, on every
// path a frame takes, and the caller's payload is left as it was.
func TestFramesHaveNoLoneSurrogates(t *testing.T) {
	small := json.RawMessage(`{"text":"x\ud83dy"}`)
	large := json.RawMessage(`{"pad":"` + strings.Repeat("p", rawWriteThreshold) + `","text":"x\ud83dy"}`)
	largeCopy := bytes.Clone(large)
	var out bytes.Buffer
	c := NewConn(strings.NewReader(""), &out, ConnOptions{})
	c.trackForTest("1")
	c.trackForTest("2")
	if err := c.Reply(json.RawMessage("1"), small); err != nil {
		t.Fatal(err)
	}
	if err := c.Reply(json.RawMessage("2"), large); err != nil {
		t.Fatal(err)
	}
	if err := c.Notify("note", small); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(large, largeCopy) {
		t.Error("the caller's payload was changed")
	}
	br := bufio.NewReader(&out)
	for i := range 3 {
		body, err := readStrictFrame(br)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if bytes.Contains(body, []byte(`\ud83d`)) || !bytes.Contains(body, []byte(`"x\ufffdy"`)) {
			t.Errorf("frame %d: %.80s...%s", i, body, body[max(0, len(body)-40):])
		}
	}
}
