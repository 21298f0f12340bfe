package sidecar_test

import (
	"errors"
	"os"
)

// The Windows side of os_unix_test.go: the process tests do not run on
// Windows (they drive sh and signals); these let the package compile.

func processExists(pid int) bool {
	p, err := os.FindProcess(pid)
	if err == nil {
		p.Release()
	}
	return err == nil
}

func killPID(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

func mkfifo(string) error { return errors.New("no FIFOs on Windows") }
