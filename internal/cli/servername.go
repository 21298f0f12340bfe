package cli

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
)

// splitWords splits a command line as a shell would for plain words,
// single and double quotes and backslashes; nothing is expanded.
func splitWords(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool // inside a word
		quote rune
	)
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case quote == '"':
			switch {
			case r == '"':
				quote = 0
			case r == '\\' && i+1 < len(rs) && strings.ContainsRune(`"\$`+"`", rs[i+1]):
				i++
				cur.WriteRune(rs[i])
			default:
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == '\\' && i+1 < len(rs):
			i++
			cur.WriteRune(rs[i])
			in = true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// nameFromCommand names a server given by --command after what it runs:
// the package or script a launcher is given (npx -y @x/server-filesystem
// /work is server-filesystem; python -m mcp_server_time is
// mcp_server_time; docker run -i --rm ghcr.io/o/github-mcp-server is
// github-mcp-server), else the program itself.
func nameFromCommand(words []string) string {
	program := trimExt(filepath.Base(words[0]))
	if !launchers[program] {
		return serverName(program, "server")
	}
	rest := words[1:]
	if len(rest) > 0 && launcherVerbs[rest[0]] {
		rest = rest[1:] // uv run, npm exec, pnpm dlx, docker run, go run
	}
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		switch {
		case w == "-m" && i+1 < len(rest): // python -m module
			return serverName(rest[i+1], "server")
		case valueFlags[w]:
			i++ // the flag's value
		case strings.HasPrefix(w, "-"):
		default:
			return serverName(packageName(w), "server")
		}
	}
	return serverName(program, "server")
}

// launchers run the package or script their first word that is not a
// flag names.
var launchers = map[string]bool{
	"npx": true, "bunx": true, "pnpx": true, "npm": true, "pnpm": true, "yarn": true,
	"uvx": true, "uv": true, "pipx": true, "python": true, "python3": true,
	"node": true, "deno": true, "bun": true, "tsx": true, "go": true, "docker": true, "podman": true,
}

// launcherVerbs are the subcommands of launchers that run something.
var launcherVerbs = map[string]bool{"run": true, "exec": true, "dlx": true, "x": true, "tool": true}

// valueFlags are launchers' flags whose value is the next word.
var valueFlags = map[string]bool{
	"-p": true, "--package": true, "--with": true, "--from": true, "--python": true,
	"-e": true, "--env": true, "--env-file": true, "-v": true, "--volume": true, "--mount": true,
	"--name": true, "--network": true, "-w": true, "--workdir": true, "-u": true, "--user": true,
	"--platform": true, "--entrypoint": true, "-l": true, "--label": true,
}

// packageName is the name in a package, script or image reference: its
// last path element without version, tag or extension.
func packageName(ref string) string {
	name := filepath.Base(ref)
	if i := strings.LastIndexByte(name, '@'); i > 0 {
		name = name[:i] // pkg@1.2.3
	}
	if i := strings.IndexByte(name, ':'); i > 0 {
		name = name[:i] // image:tag
	}
	return trimExt(name)
}

func trimExt(name string) string {
	switch ext := filepath.Ext(name); ext {
	case ".js", ".mjs", ".cjs", ".ts", ".py", ".exe", ".cmd", ".bat":
		return strings.TrimSuffix(name, ext)
	}
	return name
}

// nameFromURL names a server given by --url after its host: mcp.linear.app
// is linear, api.example.com example; a loopback or IP address, which says
// nothing of the server, is localhost or the address, with the port.
func nameFromURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return "server"
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); ip != nil || host == "localhost" {
		name := host
		if host == "localhost" || ip.IsLoopback() {
			name = "localhost"
		}
		if port := u.Port(); port != "" {
			name += "-" + port
		}
		return serverName(strings.NewReplacer(".", "-", ":", "-").Replace(name), "server")
	}
	labels := strings.Split(host, ".")
	if len(labels) > 1 {
		labels = labels[:len(labels)-1] // the top-level domain
	}
	for len(labels) > 1 && slices.Contains([]string{"mcp", "api", "www", "server"}, labels[0]) {
		labels = labels[1:]
	}
	return serverName(labels[0], "server")
}

// serverName makes s a valid server name (letters, digits, '_', '-').
func serverName(s, fallback string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '_', r == '-', 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if strings.Trim(b.String(), "_") == "" {
		return fallback
	}
	return b.String()
}
