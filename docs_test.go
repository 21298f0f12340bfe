package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
)

// skipDirs are folders whose Markdown is not the project's: installed
// packages, build output, test data.
var skipDirs = map[string]bool{".git": true, "node_modules": true, ".work": true, "dist": true, "target": true, "testdata": true}

// TestDocLinksResolve: every relative link of every Markdown file of the
// repository ([text](path), [text](path#anchor), [text](#anchor)) points
// to a file or folder that exists, and an anchor into a Markdown file to
// one of its headings, so that moving a page or renaming a section cannot
// leave the README or docs/ pointing nowhere.
func TestDocLinksResolve(t *testing.T) {
	var pages []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && skipDirs[d.Name()] {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 5 {
		t.Fatalf("found only %d Markdown files: %v", len(pages), pages)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(page string) map[string]bool {
		if a, ok := anchors[page]; ok {
			return a
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		a := headingAnchors(string(b))
		anchors[page] = a
		return a
	}
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, link := range markdownLinks(string(b)) {
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			target, anchor, _ := strings.Cut(link, "#")
			path := page
			if target != "" {
				path = filepath.Join(filepath.Dir(page), filepath.FromSlash(target))
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link (%s): no file %s", page, link, path)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !anchorsOf(path)[anchor] {
				t.Errorf("%s: link (%s): %s has no heading with anchor #%s", page, link, path, anchor)
			}
		}
	}
}

var (
	fencedBlock = regexp.MustCompile("(?ms)^ {0,3}(```|~~~).*?^ {0,3}```[^\\n]*$")
	codeSpan    = regexp.MustCompile("`[^`\\n]*`")
	inlineLink  = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	heading     = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(.+?)[ \t#]*$`)
	htmlAnchor  = regexp.MustCompile(`<a (?:name|id)="([^"]+)"`)
)

// proseOf is page without its code: fenced blocks and code spans, where
// brackets and parentheses are not links.
func proseOf(page string) string {
	page = fencedBlock.ReplaceAllString(page, "")
	return codeSpan.ReplaceAllString(page, "")
}

// markdownLinks returns the targets of page's inline links.
func markdownLinks(page string) []string {
	var links []string
	for _, m := range inlineLink.FindAllStringSubmatch(proseOf(page), -1) {
		links = append(links, strings.Trim(m[1], "<>"))
	}
	return links
}

// headingAnchors returns the anchors GitHub gives page's headings (lower
// case; letters, digits, '-' and '_' kept, spaces made '-', the rest
// dropped; a repeated one numbered -1, -2, ...), and explicit <a id>s.
func headingAnchors(page string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(fencedBlock.ReplaceAllString(page, ""), -1) {
		text := strings.NewReplacer("`", "", "*", "").Replace(m[1])
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			anchors[slug+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	for _, m := range htmlAnchor.FindAllStringSubmatch(page, -1) {
		anchors[m[1]] = true
	}
	return anchors
}

// TestHeadingAnchors pins the slugs TestDocLinksResolve checks anchors
// against to GitHub's, on headings of the kinds the docs have.
func TestHeadingAnchors(t *testing.T) {
	page := "# The mcp-sidecar host protocol\n## tools/list_changed\n### $/cancelRequest\n" +
		"## From a person's view\n## Processes and faults\n## Processes and faults\n" +
		"```\n# not a heading\n```\n## `mcp/input`\n"
	got := headingAnchors(page)
	want := map[string]bool{
		"the-mcp-sidecar-host-protocol": true,
		"toolslist_changed":             true,
		"cancelrequest":                 true,
		"from-a-persons-view":           true,
		"processes-and-faults":          true,
		"processes-and-faults-1":        true,
		"mcpinput":                      true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("headingAnchors (-want +got):\n%s", diff)
	}
}

// TestReadmeHostSnippetMatchesExample keeps the README's TypeScript host
// true to examples/typescript-host/host.ts, which CI compiles with tsc
// --strict and runs: every code line of the README's ```ts block is a line
// of host.ts (indentation aside), in host.ts's order, and each name it
// imports host.ts imports from the same module. Comments are the README's
// own.
func TestReadmeHostSnippetMatchesExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	host, err := os.ReadFile("examples/typescript-host/host.ts")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "\n```ts\n")
	if !ok {
		t.Fatal("README.md has no ```ts block")
	}
	block, _, ok = strings.Cut(block, "\n```")
	if !ok {
		t.Fatal("README.md's ```ts block does not end")
	}
	var hostLines []string
	imports := map[string]map[string]bool{} // module -> names host.ts imports
	for _, l := range strings.Split(string(host), "\n") {
		l = strings.TrimSpace(l)
		hostLines = append(hostLines, l)
		if module, names, ok := parseImport(l); ok {
			if imports[module] == nil {
				imports[module] = map[string]bool{}
			}
			for _, n := range names {
				imports[module][n] = true
			}
		}
	}
	next := 0 // the host.ts line after the last one matched
	lines := 0
	for _, l := range strings.Split(block, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "//") {
			continue
		}
		lines++
		if module, names, ok := parseImport(l); ok {
			for _, n := range names {
				if !imports[module][n] {
					t.Errorf("README imports %s from %q; examples/typescript-host/host.ts does not", n, module)
				}
			}
			continue
		}
		i := indexFrom(hostLines, next, l)
		if i < 0 {
			t.Errorf("README's TypeScript host line %q is not a line of examples/typescript-host/host.ts after the previous one", l)
			continue
		}
		next = i + 1
	}
	if lines < 10 {
		t.Errorf("README's TypeScript host has %d lines of code; want a whole host", lines)
	}
}

var importLine = regexp.MustCompile(`^import (?:\{([^}]*)\}|(\w+)) from '([^']+)';$`)

// parseImport reads a one-line ES import: its module and the names it
// brings in.
func parseImport(line string) (module string, names []string, ok bool) {
	m := importLine.FindStringSubmatch(line)
	if m == nil {
		return "", nil, false
	}
	if m[2] != "" {
		return m[3], []string{m[2]}, true
	}
	for _, n := range strings.Split(m[1], ",") {
		n = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(n), "type "))
		if n != "" {
			names = append(names, n)
		}
	}
	return m[3], names, true
}

func indexFrom(lines []string, from int, s string) int {
	for i := from; i < len(lines); i++ {
		if lines[i] == s {
			return i
		}
	}
	return -1
}
