package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// List result keys.
const (
	KeyTools             = "tools"
	KeyResources         = "resources"
	KeyResourceTemplates = "resourceTemplates"
	KeyPrompts           = "prompts"
)

// DecodePage splits one list result ({"tools"|"resources"|"resourceTemplates"|
// "prompts": [...], "nextCursor"?}) into its raw items and the next cursor.
// Items are the exact bytes of the result (whitespace inside an item
// included): nothing is decoded into Go values and re-encoded. A missing
// nextCursor, a null one and "" all mean the last page.
//
// The result must be one JSON object whose key member is an array (null
// counts as empty); other members are ignored. A result without the key is
// an error, not an empty page, so a server answering with the wrong shape is
// reported rather than shown as having no tools.
func DecodePage(result json.RawMessage, key string) (items []json.RawMessage, next string, err error) {
	items, next, _, err = decodePage(result, key)
	return items, next, err
}

// decodePage is DecodePage with the page's caching hints.
func decodePage(result json.RawMessage, key string) (items []json.RawMessage, next string, hints CacheHints, err error) {
	dec := json.NewDecoder(bytes.NewReader(result))
	if err := expectDelim(dec, '{'); err != nil {
		return nil, "", CacheHints{}, fmt.Errorf("%s page: %w", key, err)
	}
	var haveItems, haveCursor bool
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, "", CacheHints{}, fmt.Errorf("%s page: %w", key, err)
		}
		name, _ := tok.(string)
		switch name {
		case key:
			if haveItems {
				return nil, "", CacheHints{}, fmt.Errorf("%s page: duplicate %q member", key, key)
			}
			haveItems = true
			if items, err = decodeItems(dec); err != nil {
				return nil, "", CacheHints{}, fmt.Errorf("%s page: %q: %w", key, key, err)
			}
		case "nextCursor":
			if haveCursor {
				return nil, "", CacheHints{}, fmt.Errorf("%s page: duplicate nextCursor member", key)
			}
			haveCursor = true
			var c *string
			if err := dec.Decode(&c); err != nil {
				return nil, "", CacheHints{}, fmt.Errorf("%s page: nextCursor: %w", key, err)
			}
			if c != nil {
				next = *c
			}
		default:
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return nil, "", CacheHints{}, fmt.Errorf("%s page: %q: %w", key, name, err)
			}
			switch name {
			case "ttlMs":
				hints.TTLMs = new(ttlOf(v))
			case "cacheScope":
				hints.Scope = scopeOf(v)
			}
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, "", CacheHints{}, fmt.Errorf("%s page: %w", key, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, "", CacheHints{}, fmt.Errorf("%s page: data after the result object", key)
	}
	if !haveItems {
		return nil, "", CacheHints{}, fmt.Errorf("%s page: no %q member in the result", key, key)
	}
	return items, next, hints, nil
}

func decodeItems(dec *json.Decoder) ([]json.RawMessage, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if tok == nil {
		return nil, nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, fmt.Errorf("not an array")
	}
	var items []json.RawMessage
	for dec.More() {
		var item json.RawMessage
		if err := dec.Decode(&item); err != nil {
			return nil, fmt.Errorf("item #%d: %w", len(items), err)
		}
		items = append(items, item)
	}
	if _, err := dec.Token(); err != nil { // ']'
		return nil, err
	}
	return items, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("result is not a JSON object")
	}
	return nil
}

// PageLimits bound how far Paginate follows a server's cursors. A zero or
// negative field means its default.
type PageLimits struct {
	MaxPages       int // default 100
	MaxItems       int // default 4096
	MaxCursorBytes int // default 64 KiB
}

// DefaultPageLimits are the limits of the contract (docs/protocol.md, "Limits").
func DefaultPageLimits() PageLimits {
	return PageLimits{MaxPages: 100, MaxItems: 4096, MaxCursorBytes: 64 << 10}
}

func (l PageLimits) withDefaults() PageLimits {
	d := DefaultPageLimits()
	if l.MaxPages <= 0 {
		l.MaxPages = d.MaxPages
	}
	if l.MaxItems <= 0 {
		l.MaxItems = d.MaxItems
	}
	if l.MaxCursorBytes <= 0 {
		l.MaxCursorBytes = d.MaxCursorBytes
	}
	return l
}

// Page limit names, as reported in LimitError.Limit.
const (
	LimitPages        = "pages"
	LimitItems        = "items"
	LimitCursorBytes  = "cursor bytes"
	LimitCursorRepeat = "repeated cursor"
)

// ErrPageLimit is matched (errors.Is) by every LimitError.
var ErrPageLimit = errors.New("list exceeds a pagination limit")

// LimitError says that a listing was stopped because it crossed a cap or
// repeated a cursor. Paginate does not know which server it is listing;
// callers wrap the error with the server's name.
type LimitError struct {
	Key   string // "tools", "resources", ...
	Limit string // LimitPages, LimitItems, LimitCursorBytes or LimitCursorRepeat
	Max   int    // the cap (0 for a repeated cursor)
	Page  int    // 1-based page at which the listing stopped
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case LimitCursorRepeat:
		return fmt.Sprintf("%s list: page %d repeats an earlier cursor (the server would loop)", e.Key, e.Page)
	case LimitPages:
		return fmt.Sprintf("%s list: more than %d pages (limit MaxPages); not truncating", e.Key, e.Max)
	case LimitItems:
		return fmt.Sprintf("%s list: more than %d items by page %d (limit MaxItems); not truncating", e.Key, e.Max, e.Page)
	case LimitCursorBytes:
		return fmt.Sprintf("%s list: page %d has a cursor over %d bytes (limit MaxCursorBytes)", e.Key, e.Page, e.Max)
	}
	return fmt.Sprintf("%s list: limit %s (%d) exceeded at page %d", e.Key, e.Limit, e.Max, e.Page)
}

func (e *LimitError) Is(target error) bool { return target == ErrPageLimit }

// Paginate follows nextCursor: fetch(ctx, "") and then fetch(ctx, next)
// until a page has no cursor. It fetches at most MaxPages pages and accepts
// at most MaxItems items and cursors of at most MaxCursorBytes; a cursor seen
// before is an error (the server would loop). Crossing any of these is a
// *LimitError: a listing is never silently truncated. Errors of fetch and of
// DecodePage are returned wrapped with the page number.
func Paginate(ctx context.Context, key string, limits PageLimits, fetch func(ctx context.Context, cursor string) (json.RawMessage, error)) ([]json.RawMessage, error) {
	l, err := PaginateListing(ctx, key, limits, fetch)
	return l.Items, err
}

// A Listing is a whole list: the items of every page, and the caching
// hints of the pages together (CacheHints.Merge).
type Listing struct {
	Items []json.RawMessage
	Hints CacheHints
}

// PaginateListing is Paginate with the pages' caching hints.
func PaginateListing(ctx context.Context, key string, limits PageLimits, fetch func(ctx context.Context, cursor string) (json.RawMessage, error)) (Listing, error) {
	limits = limits.withDefaults()
	var all []json.RawMessage
	var hints CacheHints
	seen := make(map[string]bool)
	cursor := ""
	for page := 1; ; page++ {
		if err := ctx.Err(); err != nil {
			return Listing{}, err
		}
		if page > limits.MaxPages {
			return Listing{}, &LimitError{Key: key, Limit: LimitPages, Max: limits.MaxPages, Page: page}
		}
		result, err := fetch(ctx, cursor)
		if err != nil {
			return Listing{}, fmt.Errorf("%s list page %d: %w", key, page, err)
		}
		items, next, h, err := decodePage(result, key)
		if err != nil {
			return Listing{}, fmt.Errorf("page %d: %w", page, err)
		}
		if page == 1 {
			hints = h
		} else {
			hints = hints.Merge(h)
		}
		if len(all)+len(items) > limits.MaxItems {
			return Listing{}, &LimitError{Key: key, Limit: LimitItems, Max: limits.MaxItems, Page: page}
		}
		all = append(all, items...)
		if next == "" {
			if all == nil {
				all = []json.RawMessage{}
			}
			return Listing{Items: all, Hints: hints}, nil
		}
		if len(next) > limits.MaxCursorBytes {
			return Listing{}, &LimitError{Key: key, Limit: LimitCursorBytes, Max: limits.MaxCursorBytes, Page: page}
		}
		if seen[next] {
			return Listing{}, &LimitError{Key: key, Limit: LimitCursorRepeat, Page: page}
		}
		seen[next] = true
		cursor = next
	}
}
