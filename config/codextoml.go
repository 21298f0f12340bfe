package config

import (
	"fmt"

	"github.com/BurntSushi/toml"
)

func parseTOML(src Source, dir string, data []byte) parsed {
	path := src.Path
	if perr := checkTOMLShape(path, data); perr != nil {
		return failed(perr)
	}
	var top map[string]any
	if _, err := toml.Decode(string(data), &top); err != nil {
		return failed(describeTOMLError(path, err))
	}
	r := parsed{servers: map[string]*ServerConfig{}}
	// The top-level OAuth keys go to every server of the file; a bad
	// value is a problem of the file, and the servers start without it.
	level := &ServerConfig{}
	for _, key := range fileLevelKeys() {
		if v, ok := top[key]; ok {
			applyFileLevel(level, key, v, func(key, format string, args ...any) {
				r.errs = append(r.errs, &Error{File: path, Key: key, Message: fmt.Sprintf(format, args...)})
			})
		}
	}
	raw, ok := top["mcp_servers"]
	if !ok {
		return r
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		r.errs = append(r.errs, &Error{File: path, Key: "mcp_servers", Message: "expected a table of servers ([mcp_servers.NAME])"})
		return r
	}
	got := decodeServers(obj, src.Trust, func(name string) *serverDecoder {
		return &serverDecoder{dialect: dialectCodex, file: path, name: name, dir: dir}
	})
	for _, c := range got.servers {
		c.OAuthCredentialsStore = level.OAuthCredentialsStore
		c.OAuthCallbackPort = level.OAuthCallbackPort
		c.OAuthCallbackURL = level.OAuthCallbackURL
	}
	got.errs = append(r.errs, got.errs...)
	return got
}
