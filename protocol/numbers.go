package protocol

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/mcp-sidecar/mcp-sidecar/internal/jsonscan"
)

// Integers in params. The schema (schema/protocol.schema.json) types counts,
// sizes and milliseconds as JSON Schema's "integer", which is any number
// whose fractional part is zero: 5000, 5000.0 and 5e3 are one value, and a
// host written in JavaScript or Python may send any of them. encoding/json
// takes only the first into a Go integer, and says so with a Go type name;
// DecodeParams and ParseInteger take all three and say in words what is
// wrong with the rest.

var (
	// ErrNotInteger is a JSON number with a fractional part, or no number.
	ErrNotInteger = errors.New("not an integer")
	// ErrIntegerRange is an integer too large for the member it is for.
	ErrIntegerRange = errors.New("integer out of range")
)

// ParseInteger reads the JSON number num as an integer: any number with a
// zero fractional part (-3, 2.0, 5e3, 1.5E+1). It returns ErrNotInteger for
// a number with a fractional part or anything that is not a JSON number,
// and ErrIntegerRange for an integer outside int64. A number's exponent
// costs nothing however large: 1e1000000000 is out of range at once.
func ParseInteger(num []byte) (int64, error) {
	if plainInteger(num) {
		if n, err := strconv.ParseInt(string(num), 10, 64); err == nil {
			return n, nil
		}
		return 0, ErrIntegerRange
	}
	neg, intDigits, fracDigits, exp, ok := splitNumber(num)
	if !ok {
		return 0, ErrNotInteger
	}
	// The value is digits x 10^shift.
	digits := strings.TrimLeft(intDigits+fracDigits, "0")
	trimmed := strings.TrimRight(digits, "0")
	if trimmed == "" {
		return 0, nil // zero, however written
	}
	// shift = exp - len(fracDigits) + the trailing zeros trimmed, with an
	// exponent of more than 9 digits kept apart so nothing overflows.
	zeros := len(digits) - len(trimmed)
	var shift int64
	switch {
	case len(exp) > 9 && exp[0] == '-':
		return 0, ErrNotInteger // a nonzero value under 1
	case len(exp) > 9:
		return 0, ErrIntegerRange
	default:
		e, _ := strconv.ParseInt(exp, 10, 64)
		shift = e - int64(len(fracDigits)) + int64(zeros)
	}
	if shift < 0 {
		return 0, ErrNotInteger
	}
	if int64(len(trimmed))+shift > 19 { // MaxInt64 has 19 digits
		return 0, ErrIntegerRange
	}
	text := trimmed + strings.Repeat("0", int(shift))
	if neg {
		text = "-" + text
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, ErrIntegerRange
	}
	return n, nil
}

// plainInteger reports whether num is a JSON integer written without
// fraction or exponent: what nearly every host sends.
func plainInteger(num []byte) bool {
	d := num
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || (d[0] == '0' && len(d) > 1) {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// splitNumber splits a JSON number into its sign, integer digits, fraction
// digits and exponent (signed decimal digits without leading zeros, "0"
// when absent). ok is false when num is not a JSON number.
func splitNumber(num []byte) (neg bool, intDigits, fracDigits, exp string, ok bool) {
	s := string(num)
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	digitsEnd := func(s string) int {
		i := 0
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		return i
	}
	i := digitsEnd(s)
	if i == 0 || (s[0] == '0' && i > 1) {
		return false, "", "", "", false
	}
	intDigits, s = s[:i], s[i:]
	if strings.HasPrefix(s, ".") {
		i = digitsEnd(s[1:])
		if i == 0 {
			return false, "", "", "", false
		}
		fracDigits, s = s[1:1+i], s[1+i:]
	}
	exp = "0"
	if s != "" && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		sign := ""
		if s != "" && (s[0] == '+' || s[0] == '-') {
			if s[0] == '-' {
				sign = "-"
			}
			s = s[1:]
		}
		i = digitsEnd(s)
		if i == 0 {
			return false, "", "", "", false
		}
		if d := strings.TrimLeft(s[:i], "0"); d != "" {
			exp = sign + d
		}
		s = s[i:]
	}
	if s != "" {
		return false, "", "", "", false
	}
	return neg, intDigits, fracDigits, exp, true
}

// IntegerError is a member of params that must be an integer and is not,
// or is out of the range its field takes.
type IntegerError struct {
	Field string // the member, as a path: "limit", "limits.maxFrameBytes"
	Num   string // the number as sent, cut short when long
	Err   error  // ErrNotInteger or ErrIntegerRange
	// Min and Max are the range of the field (with ErrIntegerRange).
	Min, Max int64
}

func (e *IntegerError) Error() string {
	if errors.Is(e.Err, ErrIntegerRange) {
		return fmt.Sprintf("%s must be an integer from %d to %d, not %s", e.Field, e.Min, e.Max, e.Num)
	}
	return fmt.Sprintf("%s must be an integer, not %s", e.Field, e.Num)
}

func (e *IntegerError) Unwrap() error { return e.Err }

// integerError is the IntegerError of field for num.
func integerError(field string, num []byte, err error, min, max int64) *IntegerError {
	const maxShown = 40
	s := string(num)
	if len(s) > maxShown {
		s = s[:maxShown] + "..."
	}
	return &IntegerError{Field: field, Num: s, Err: err, Min: min, Max: max}
}

// ParseIntegerField is ParseInteger for the member field of params, with
// its errors an *IntegerError naming it.
func ParseIntegerField(field string, num []byte) (int64, error) {
	n, err := ParseInteger(num)
	if err != nil {
		return 0, integerError(field, num, err, -1<<63, 1<<63-1)
	}
	return n, nil
}

// DecodeParams decodes the params of a request into v, a pointer to its
// params struct, as encoding/json does, with two differences: a member of
// an integer type takes any JSON number with a zero fractional part
// (ParseInteger), and an error is a -32602 *Error that says in words which
// member is wrong ("limit must be an integer, not 2.5"; "query must be a
// string, not a number"), never a Go type. Absent or null params decode as
// {}.
func DecodeParams(params json.RawMessage, v any) error {
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	err := json.Unmarshal(params, v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && isInteger(te.Type) && strings.HasPrefix(te.Value, "number ") {
		// A number an integer member did not take: rewrite every integral
		// number such members have into plain digits, and decode again.
		// Only this (rare) path walks the params.
		fixed, ferr := canonicalIntegers(params, reflect.TypeOf(v), "")
		if ferr != nil {
			return NewError(CodeInvalidParams, KindInvalidParams, ferr.Error())
		}
		reflect.ValueOf(v).Elem().SetZero()
		if err = json.Unmarshal(fixed, v); err == nil {
			return nil
		}
	}
	return NewError(CodeInvalidParams, KindInvalidParams, paramsErrorWords(err))
}

// paramsErrorWords says what err, from json.Unmarshal of params, found
// wrong, without Go's names for types.
func paramsErrorWords(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "params"
		}
		got := te.Value
		if n, ok := strings.CutPrefix(got, "number "); ok {
			got = n
		} else {
			got = article(got)
		}
		return fmt.Sprintf("%s must be %s, not %s", field, jsonKind(te.Type), got)
	case errors.As(err, &se):
		return "params are not valid JSON: " + se.Error()
	}
	return "invalid params: " + err.Error()
}

// jsonKind names in words the JSON values a Go type takes.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case isInteger(t):
		return "an integer"
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another kind of value"
}

// article puts "a" or "an" before the JSON kind encoding/json names
// ("string", "object", "bool").
func article(kind string) string {
	switch kind {
	case "bool":
		return "true or false"
	case "array", "object":
		return "an " + kind
	}
	return "a " + kind
}

func isInteger(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decodesItself reports whether values of t decode themselves: their
// integers, if any, are theirs to read.
func decodesItself(t reflect.Type) bool {
	return t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) ||
		t.Implements(textUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType)
}

// hasIntegers reports whether a value of t may hold a member of an
// integer type that encoding/json decodes.
func hasIntegers(t reflect.Type, seen map[reflect.Type]bool) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if seen[t] || decodesItself(t) {
		return false
	}
	if isInteger(t) {
		return true
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return hasIntegers(t.Elem(), seen)
	case reflect.Struct:
		for _, f := range reflect.VisibleFields(t) {
			if f.IsExported() && hasIntegers(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

// canonicalIntegers returns the JSON value data, decoded into a t, with
// every number an integer member of t would take written as plain digits.
// Nothing else changes but for white space and the escapes of member
// names; the result is only ever decoded. path names data for errors.
func canonicalIntegers(data []byte, t reflect.Type, path string) ([]byte, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if !hasIntegers(t, map[reflect.Type]bool{}) {
		return data, nil
	}
	v := bytes.TrimSpace(data)
	if len(v) == 0 {
		return data, nil
	}
	switch {
	case isInteger(t):
		if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
			return data, nil // not a number: encoding/json says so
		}
		return canonicalInteger(v, t, path)
	case t.Kind() == reflect.Struct && v[0] == '{':
		return rewriteMembers(v, func(name string) (reflect.Type, string) {
			f, ok := memberField(t, name)
			if !ok {
				return nil, ""
			}
			return f.typ, join(path, f.name)
		})
	case t.Kind() == reflect.Map && v[0] == '{':
		return rewriteMembers(v, func(name string) (reflect.Type, string) {
			return t.Elem(), join(path, name)
		})
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && v[0] == '[':
		var b bytes.Buffer
		b.WriteByte('[')
		i := jsonscan.SkipSpace(v, 1)
		for n := 0; i < len(v) && v[i] != ']'; n++ {
			end := jsonscan.ValueEnd(v, i)
			elem, err := canonicalIntegers(v[i:end], t.Elem(), fmt.Sprintf("%s[%d]", path, n))
			if err != nil {
				return nil, err
			}
			if n > 0 {
				b.WriteByte(',')
			}
			b.Write(elem)
			i = jsonscan.SkipSpace(v, end)
			if i < len(v) && v[i] == ',' {
				i = jsonscan.SkipSpace(v, i+1)
			}
		}
		b.WriteByte(']')
		return b.Bytes(), nil
	}
	return data, nil
}

// canonicalInteger writes the number num, for a member of integer type t,
// as plain digits.
func canonicalInteger(num []byte, t reflect.Type, path string) ([]byte, error) {
	min, max := integerRange(t)
	n, err := ParseInteger(num)
	if err == nil && (n < min || n > max) {
		err = ErrIntegerRange
	}
	if err != nil {
		return nil, integerError(path, num, err, min, max)
	}
	return strconv.AppendInt(nil, n, 10), nil
}

// integerRange is the range of an integer type, within int64.
func integerRange(t reflect.Type) (min, max int64) {
	bits := t.Bits()
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if bits >= 64 {
			return 0, 1<<63 - 1
		}
		return 0, 1<<bits - 1
	}
	return -1 << (bits - 1), 1<<(bits-1) - 1
}

// rewriteMembers rewrites the values of the JSON object obj whose member
// types field gives (nil: left as they are).
func rewriteMembers(obj []byte, field func(name string) (reflect.Type, string)) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	m, _ := jsonscan.Object(obj)
	for first := true; ; first = false {
		k, value, ok := m.Next()
		if !ok {
			break
		}
		name := string(jsonscan.AppendName(nil, k))
		if t, path := field(name); t != nil {
			var err error
			if value, err = canonicalIntegers(value, t, path); err != nil {
				return nil, err
			}
		}
		if !first {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(name) // a string always marshals
		b.Write(key)
		b.WriteByte(':')
		b.Write(value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

type structField struct {
	name string // the JSON name
	typ  reflect.Type
}

// memberField finds the field of struct t that encoding/json decodes the
// member name into: the exact JSON name, else one equal under case folding.
func memberField(t reflect.Type, name string) (structField, bool) {
	var folded *structField
	for _, f := range reflect.VisibleFields(t) {
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if !f.IsExported() || f.Anonymous && ft.Kind() == reflect.Struct && f.Tag.Get("json") == "" {
			continue // its fields are promoted: VisibleFields has them
		}
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		if tag == name {
			return structField{tag, f.Type}, true
		}
		if folded == nil && strings.EqualFold(tag, name) {
			folded = &structField{tag, f.Type}
		}
	}
	if folded != nil {
		return *folded, true
	}
	return structField{}, false
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
