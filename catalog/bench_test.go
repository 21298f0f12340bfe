package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

var benchSizes = []int{1_000, 10_000, 50_000}

// benchPage is one tools/list result of n tools whose input schemas are
// 1-3 KiB.
func benchPage(n int) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"tools":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		pad := strings.Repeat("x", 1024+(i%3)*1024)
		fmt.Fprintf(&b, `{"name":"tool.%d","description":"Tool number %d","inputSchema":{"type":"object","properties":{"q":{"type":"string","description":"%s"},"n":{"type":"integer","maximum":12345678901234567890}},"required":["q"]},"annotations":{"readOnlyHint":true}}`, i, i, pad)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

func BenchmarkDecodeAndParse(b *testing.B) {
	for _, n := range benchSizes {
		page := benchPage(n)
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(page)))
			for b.Loop() {
				items, _, err := DecodePage(page, KeyTools)
				if err != nil {
					b.Fatal(err)
				}
				tools, err := ParseTools("srv", items)
				if err != nil || len(tools) != n {
					b.Fatal(err, len(tools))
				}
			}
		})
	}
}

func BenchmarkQualify(b *testing.B) {
	for _, n := range benchSizes {
		tools := make([]Tool, n)
		for i := range tools {
			// A mix of the cases: plain, dotted (sanitised), colliding
			// pairs and over-long names.
			switch i % 4 {
			case 0:
				tools[i] = Tool{Server: fmt.Sprintf("srv%d", i%7), Name: fmt.Sprintf("tool_%d", i)}
			case 1:
				tools[i] = Tool{Server: "srv", Name: fmt.Sprintf("ns.tool.%d", i)}
			case 2:
				tools[i] = Tool{Server: "srv", Name: fmt.Sprintf("pair.%d", i/4)}
				if i%8 == 6 {
					tools[i].Name = fmt.Sprintf("pair_%d", i/4-1)
				}
			case 3:
				tools[i] = Tool{Server: "srv", Name: strings.Repeat("long", 20) + fmt.Sprint(i)}
			}
		}
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Qualify(tools, 0)
			}
		})
	}
}

// BenchmarkNamesRequalify: a session's rebuild after one server changed,
// every other tool named before (the common case of a rebuild).
func BenchmarkNamesRequalify(b *testing.B) {
	for _, n := range benchSizes {
		tools := make([]Tool, n)
		for i := range tools {
			tools[i] = Tool{Server: fmt.Sprintf("srv%d", i%7), Name: fmt.Sprintf("tool_%d", i)}
		}
		var names Names
		names.Qualify(tools)
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				names.Qualify(tools)
			}
		})
	}
}
