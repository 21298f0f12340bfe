//go:build !unix

package exampleserver

import "os/exec"

// killGroupOnCancel: without process groups, os/exec's default (kill the
// process) is what there is; the sidecar's job object ends the rest when
// the server closes.
func killGroupOnCancel(*exec.Cmd) {}
