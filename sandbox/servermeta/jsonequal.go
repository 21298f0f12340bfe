package servermeta

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// JSONEqual reports whether a and b are the same JSON value: object key
// order and whitespace do not matter, numbers are equal when they denote
// the same decimal number (1 == 1.0 == 1e0, 12345678901234567890 !=
// 12345678901234567000). Invalid JSON equals nothing.
func JSONEqual(a, b []byte) bool {
	va, ok := decodeExact(a)
	if !ok {
		return false
	}
	vb, ok := decodeExact(b)
	if !ok {
		return false
	}
	return valueEqual(va, vb)
}

func decodeExact(data []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err == nil {
		return nil, false // more than one value
	}
	return v, true
}

func valueEqual(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, va := range a {
			vb, ok := b[k]
			if !ok || !valueEqual(va, vb) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !valueEqual(a[i], b[i]) {
				return false
			}
		}
		return true
	case json.Number:
		b, ok := b.(json.Number)
		return ok && numberEqual(string(a), string(b))
	default: // string, bool, nil
		return a == b
	}
}

// decimal is a JSON number as sign, significant digits without leading or
// trailing zeros, and the exponent of the last digit. Zero is {digits: ""}.
type decimal struct {
	neg    bool
	digits string
	exp    int64
}

func numberEqual(a, b string) bool {
	da, okA := parseDecimal(a)
	db, okB := parseDecimal(b)
	if !okA || !okB {
		return a == b
	}
	return da == db
}

// parseDecimal normalises a JSON number without converting it, so that
// huge exponents cost nothing and no precision is lost.
func parseDecimal(s string) (decimal, bool) {
	var d decimal
	if strings.HasPrefix(s, "-") {
		d.neg = true
		s = s[1:]
	}
	mant, expPart, hasExp := strings.Cut(strings.ToLower(s), "e")
	var exp int64
	if hasExp {
		e, err := strconv.ParseInt(expPart, 10, 64)
		// Bounded so that adjusting by the digit count cannot overflow.
		if err != nil || e > 1<<62 || e < -(1<<62) {
			return d, false
		}
		exp = e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	exp -= int64(len(frac))
	digits = strings.TrimLeft(digits, "0")
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	d.digits = trimmed
	d.exp = exp
	if d.digits == "" {
		return decimal{}, true // -0 == 0
	}
	return d, true
}
