//go:build !linux

package pipeio

import "os"

// File is a non-blocking file read and written with raw system calls:
// only on Linux.
type File struct{}

// Open returns nil: on this platform f is read and written as it is.
func Open(f *os.File) *File { return nil }

// OSFile is never called: Open returns no File.
func (p *File) OSFile() *os.File { panic("pipeio: no File on this platform") }

// Read is never called: Open returns no File.
func (p *File) Read(b []byte) (int, error) { panic("pipeio: no File on this platform") }

// Write is never called: Open returns no File.
func (p *File) Write(b []byte) (int, error) { panic("pipeio: no File on this platform") }

// WriteNoWait is never called: Open returns no File.
func (p *File) WriteNoWait(b []byte) int { panic("pipeio: no File on this platform") }
