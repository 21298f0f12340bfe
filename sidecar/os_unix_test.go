//go:build unix

package sidecar_test

import "syscall"

// The few operating-system calls the tests make, apart so that the test
// package compiles (and vets) for Windows too, where none of these tests
// run.

func processExists(pid int) bool { return syscall.Kill(pid, 0) == nil }
func killPID(pid int) error      { return syscall.Kill(pid, syscall.SIGKILL) }
func mkfifo(path string) error   { return syscall.Mkfifo(path, 0o600) }
