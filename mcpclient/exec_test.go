package mcpclient

import (
	"os"
	"os/exec"

	"github.com/mcp-sidecar/mcp-sidecar/config"
)

func execCommand(cfg *config.ServerConfig) *exec.Cmd {
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Env = config.ChildEnv(cfg, os.LookupEnv)
	return cmd
}
