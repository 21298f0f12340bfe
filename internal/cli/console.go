package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// console is the person at the terminal while call runs a tool: it keeps
// the tool's progress on one line of stderr, redrawn in place, and asks
// the questions a server asks (elicitation) as a form. It is the writer
// under the command's stderr, so that a line printed meanwhile (a
// warning, --verbose) is printed above the progress line, not into it.
type console struct {
	w       io.Writer // the terminal (stderr)
	columns int
	paint   painter
	in      *lineInput // nil: no terminal to answer on

	mu sync.Mutex
	// line is the progress line drawn ("" when none); asking is set while
	// a form is on the terminal (progress is kept, not drawn).
	line   string
	asking bool

	// forms asks one form at a time.
	forms sync.Mutex
}

func newConsole(env Env, in *lineInput) *console {
	return &console{w: env.Stderr, columns: terminalWidth(env.Stderr, env.lookup), paint: newPainter(env, env.Stderr), in: in}
}

// Write prints p above the progress line.
func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.line == "" || c.asking {
		return c.w.Write(p)
	}
	io.WriteString(c.w, "\r\x1b[2K")
	n, err := c.w.Write(p)
	io.WriteString(c.w, c.line)
	return n, err
}

// progress shows a progress notification on the progress line.
func (c *console) progress(p protocol.ProgressValue) {
	line := "  progress " + formatProgress(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.line = "\r\x1b[2K" + cut(line, c.columns-1)
	if !c.asking {
		io.WriteString(c.w, c.line)
	}
}

// done clears the progress line: the result follows.
func (c *console) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.line != "" && !c.asking {
		io.WriteString(c.w, "\r\x1b[2K")
	}
	c.line = ""
}

// formatProgress is "2/3 step 2 of 3": the progress, its total when
// known, and the server's message.
func formatProgress(p protocol.ProgressValue) string {
	s := strconv.FormatFloat(p.Progress, 'g', -1, 64)
	if p.Total != nil {
		s += "/" + strconv.FormatFloat(*p.Total, 'g', -1, 64)
	}
	if p.Message != "" {
		s += " " + p.Message
	}
	return s
}

// errCancelled is the person ending a form with Ctrl-D.
var errCancelled = errors.New("cancelled")

// elicit asks the person the form a server sent, field by field, each
// answer checked against its field's schema, then whether to send it:
// accept with the answers, decline ("n"), or cancel (Ctrl-D, or a form
// this terminal cannot show).
func (c *console) elicit(ctx context.Context, p protocol.ElicitParams) (any, error) {
	var req struct {
		Mode            string          `json:"mode"`
		Message         string          `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	}
	if err := json.Unmarshal(p.Params, &req); err != nil {
		return nil, protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, err.Error())
	}
	cancel := map[string]any{"action": "cancel"}
	if req.Mode != "" && req.Mode != "form" {
		return cancel, nil // only form elicitation is declared
	}
	c.forms.Lock()
	defer c.forms.Unlock()
	c.mu.Lock()
	c.asking = true
	if c.line != "" {
		io.WriteString(c.w, "\r\x1b[2K")
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.asking = false
		io.WriteString(c.w, c.line)
		c.mu.Unlock()
	}()

	fmt.Fprintf(c.w, "\n%s %s\n", c.paint.paint(bold, fmt.Sprintf("Server %q asks:", p.Server)), req.Message)
	fields, err := formFields(req.RequestedSchema)
	if err != nil {
		fmt.Fprintf(c.w, "  This form cannot be shown here (%v): cancelled.\n", err)
		return cancel, nil
	}
	if len(fields) > 0 {
		fmt.Fprintln(c.w, "  (Enter leaves an optional field out; Ctrl-D cancels.)")
	}
	content := map[string]any{}
	for _, f := range fields {
		v, ok, err := c.askField(ctx, f)
		if errors.Is(err, errCancelled) {
			fmt.Fprintln(c.w, "\n  Cancelled.")
			return cancel, nil
		}
		if err != nil {
			return nil, err
		}
		if ok {
			content[f.name] = v
		}
	}
	for {
		fmt.Fprintf(c.w, "Send this to %s? [Y/n] ", p.Server)
		line, err := c.in.readLine(ctx)
		if errors.Is(err, errCancelled) {
			fmt.Fprintln(c.w, "\n  Cancelled.")
			return cancel, nil
		}
		if err != nil {
			return nil, err
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "", "y", "yes":
			return map[string]any{"action": "accept", "content": content}, nil
		case "n", "no":
			return map[string]any{"action": "decline"}, nil
		}
	}
}

// askField asks one field until the answer fits it. ok is false when the
// person left an optional field out (the sidecar then fills in its
// default, if it has one).
func (c *console) askField(ctx context.Context, f formField) (any, bool, error) {
	if len(f.options) > 0 {
		for i, o := range f.options {
			fmt.Fprintf(c.w, "    %d) %s\n", i+1, o.label())
		}
	}
	for {
		fmt.Fprintf(c.w, "  %s: ", f.prompt())
		line, err := c.in.readLine(ctx)
		if err != nil {
			return nil, false, err
		}
		line = strings.TrimSpace(line)
		if line == "" {
			if f.required && !f.hasDefault {
				fmt.Fprintln(c.w, "    An answer is needed.")
				continue
			}
			return nil, false, nil
		}
		v, err := f.parse(line)
		if err != nil {
			fmt.Fprintf(c.w, "    %v.\n", err)
			continue
		}
		return v, true, nil
	}
}

// formField is one property of an elicitation's requestedSchema, which
// MCP limits to flat fields: strings (with a format or a choice of
// values), numbers, integers, booleans, and arrays of choices.
type formField struct {
	name, title, description string
	kind                     string // string, number, integer, boolean, array
	format                   string
	required, hasDefault     bool
	defaultValue             json.RawMessage
	minLength, maxLength     *int
	minimum, maximum         *float64
	minItems, maxItems       *int
	options                  []option // enum or oneOf/anyOf of consts
}

type option struct {
	value any
	title string
}

func (o option) label() string {
	v := fmt.Sprint(o.value)
	if o.title != "" && o.title != v {
		return fmt.Sprintf("%s (%s)", o.title, v)
	}
	return v
}

// formFields reads a requestedSchema's properties, in the order the
// server wrote them.
func formFields(schema json.RawMessage) ([]formField, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil, nil
	}
	var top struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(schema, &top); err != nil {
		return nil, fmt.Errorf("the schema is not an object: %w", err)
	}
	var fields []formField
	for _, p := range orderedProperties(schema) {
		f, err := readField(p.name, p.schema)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", p.name, err)
		}
		f.required = slices.Contains(top.Required, p.name)
		fields = append(fields, f)
	}
	return fields, nil
}

func readField(name string, raw json.RawMessage) (formField, error) {
	var s struct {
		Type        string          `json:"type"`
		Title       string          `json:"title"`
		Description string          `json:"description"`
		Format      string          `json:"format"`
		Default     json.RawMessage `json:"default"`
		MinLength   *int            `json:"minLength"`
		MaxLength   *int            `json:"maxLength"`
		Minimum     *float64        `json:"minimum"`
		Maximum     *float64        `json:"maximum"`
		MinItems    *int            `json:"minItems"`
		MaxItems    *int            `json:"maxItems"`
		Enum        []any           `json:"enum"`
		EnumNames   []string        `json:"enumNames"`
		OneOf       []constOption   `json:"oneOf"`
		AnyOf       []constOption   `json:"anyOf"`
		Items       *struct {
			Enum  []any         `json:"enum"`
			OneOf []constOption `json:"oneOf"`
			AnyOf []constOption `json:"anyOf"`
		} `json:"items"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return formField{}, err
	}
	f := formField{
		name: name, title: s.Title, description: s.Description, kind: s.Type, format: s.Format,
		hasDefault: len(s.Default) > 0, defaultValue: s.Default,
		minLength: s.MinLength, maxLength: s.MaxLength, minimum: s.Minimum, maximum: s.Maximum,
		minItems: s.MinItems, maxItems: s.MaxItems,
	}
	enum, names, consts := s.Enum, s.EnumNames, append(s.OneOf, s.AnyOf...)
	if s.Items != nil {
		enum, names, consts = s.Items.Enum, nil, append(s.Items.OneOf, s.Items.AnyOf...)
	}
	for i, v := range enum {
		o := option{value: v}
		if i < len(names) {
			o.title = names[i]
		}
		f.options = append(f.options, o)
	}
	for _, c := range consts {
		f.options = append(f.options, option{value: c.Const, title: c.Title})
	}
	switch f.kind {
	case "string", "number", "integer", "boolean":
	case "array":
		if len(f.options) == 0 {
			return formField{}, errors.New("an array without a list of values to choose from")
		}
	case "":
		if len(f.options) == 0 {
			return formField{}, errors.New("no type")
		}
		f.kind = "string"
	default:
		return formField{}, fmt.Errorf("type %q", f.kind)
	}
	return f, nil
}

type constOption struct {
	Const any    `json:"const"`
	Title string `json:"title"`
}

// prompt is the field's question: its title (or name), its description,
// and what an answer may be.
func (f formField) prompt() string {
	label := f.title
	if label == "" {
		label = f.name
	}
	if f.description != "" && f.description != label {
		label += " (" + f.description + ")"
	}
	var hints []string
	switch {
	case f.kind == "array":
		hints = append(hints, "numbers or values, separated by commas")
	case len(f.options) > 0:
		hints = append(hints, "a number or a value above")
	case f.kind == "boolean":
		hints = append(hints, "yes or no")
	case f.kind == "integer":
		hints = append(hints, "a whole number"+bounds(f.minimum, f.maximum))
	case f.kind == "number":
		hints = append(hints, "a number"+bounds(f.minimum, f.maximum))
	case f.format != "":
		hints = append(hints, map[string]string{"email": "an email address", "uri": "a URL", "date": "a date, YYYY-MM-DD", "date-time": "a date and time, RFC 3339"}[f.format])
	}
	if f.hasDefault {
		hints = append(hints, "default "+string(bytes.TrimSpace(f.defaultValue)))
	} else if !f.required {
		hints = append(hints, "optional")
	}
	var kept []string
	for _, h := range hints {
		if h != "" {
			kept = append(kept, h)
		}
	}
	if len(kept) > 0 {
		label += " [" + strings.Join(kept, "; ") + "]"
	}
	return label
}

func bounds(min, max *float64) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	switch {
	case min != nil && max != nil:
		return fmt.Sprintf(" from %s to %s", f(*min), f(*max))
	case min != nil:
		return " from " + f(*min)
	case max != nil:
		return " up to " + f(*max)
	}
	return ""
}

// parse checks an answer against the field and returns its value.
func (f formField) parse(s string) (any, error) {
	switch {
	case f.kind == "array":
		var out []any
		for _, part := range strings.Split(s, ",") {
			v, err := f.choose(strings.TrimSpace(part))
			if err != nil {
				return nil, err
			}
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
		if f.minItems != nil && len(out) < *f.minItems {
			return nil, fmt.Errorf("choose at least %d", *f.minItems)
		}
		if f.maxItems != nil && len(out) > *f.maxItems {
			return nil, fmt.Errorf("choose at most %d", *f.maxItems)
		}
		return out, nil
	case len(f.options) > 0:
		return f.choose(s)
	}
	switch f.kind {
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, errors.New("answer yes or no")
	case "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, errors.New("want a whole number")
		}
		return n, f.inBounds(float64(n))
	case "number":
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, errors.New("want a number")
		}
		return n, f.inBounds(n)
	}
	n := utf8.RuneCountInString(s)
	if f.minLength != nil && n < *f.minLength {
		return nil, fmt.Errorf("want at least %d characters", *f.minLength)
	}
	if f.maxLength != nil && n > *f.maxLength {
		return nil, fmt.Errorf("want at most %d characters", *f.maxLength)
	}
	switch f.format {
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
			return nil, errors.New("want an email address, like ada@example.com")
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" {
			return nil, errors.New("want a URL, like https://example.com")
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return nil, errors.New("want a date, like 2026-12-31")
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return nil, errors.New("want a date and time, like 2026-12-31T09:30:00Z")
		}
	}
	return s, nil
}

func (f formField) inBounds(n float64) error {
	if (f.minimum != nil && n < *f.minimum) || (f.maximum != nil && n > *f.maximum) {
		return fmt.Errorf("want a number%s", bounds(f.minimum, f.maximum))
	}
	return nil
}

// choose is the option an answer names: by value, else by its number in
// the list shown.
func (f formField) choose(s string) (any, error) {
	for _, o := range f.options {
		if fmt.Sprint(o.value) == s || (o.title != "" && strings.EqualFold(o.title, s)) {
			return o.value, nil
		}
	}
	if i, err := strconv.Atoi(s); err == nil && i >= 1 && i <= len(f.options) {
		return f.options[i-1].value, nil
	}
	return nil, fmt.Errorf("%q is not one of the values listed: give its number or the value", s)
}

// lineInput reads the person's answers from the terminal, a line at a
// time and only when asked (what is typed before a question stays in the
// terminal for it). A read from a terminal cannot be interrupted: a
// question given up on (the server cancelled it, Ctrl-C) leaves its read
// waiting, and the line it gets is dropped; the reading goroutine ends at
// the end of input, or with the process.
type lineInput struct {
	r    *bufio.Reader
	once sync.Once
	// want carries each read's reply channel (buffered: a reply nobody
	// waits for any more is dropped with its channel).
	want chan chan lineResult
	eof  chan struct{} // closed when the input ended
}

type lineResult struct {
	line string
	err  error
}

func newLineInput(r io.Reader) *lineInput {
	return &lineInput{r: bufio.NewReader(r), want: make(chan chan lineResult), eof: make(chan struct{})}
}

func (in *lineInput) loop() {
	defer close(in.eof)
	for reply := range in.want {
		line, err := in.r.ReadString('\n')
		if err != nil && line != "" {
			err = nil // the last line, without a newline
		}
		reply <- lineResult{line, err}
		if err != nil {
			return
		}
	}
}

// readLine reads one line; errCancelled at the end of input (Ctrl-D).
func (in *lineInput) readLine(ctx context.Context) (string, error) {
	if in == nil {
		return "", errCancelled
	}
	in.once.Do(func() { go in.loop() })
	reply := make(chan lineResult, 1)
	select {
	case in.want <- reply:
	case <-in.eof:
		return "", errCancelled
	case <-ctx.Done():
		return "", ctx.Err()
	}
	select {
	case r := <-reply:
		if r.err != nil {
			return "", errCancelled
		}
		return strings.TrimRight(r.line, "\r\n"), nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
