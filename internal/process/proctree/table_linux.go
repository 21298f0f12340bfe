package proctree

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// snapshot reads /proc/<pid>/stat of every process.
func snapshot() ([]Proc, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := make([]Proc, 0, len(names))
	buf := make([]byte, 1024)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if p, ok := readStat(pid, buf); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// lookup reads one process.
func lookup(pid int) (Proc, bool) {
	var buf [1024]byte
	return readStat(pid, buf[:])
}

// readStat parses /proc/<pid>/stat: "pid (comm) state ppid pgrp session
// ... starttime(22nd field) ...". The command name may hold spaces and
// parentheses, so fields are counted from its last ')'.
func readStat(pid int, buf []byte) (Proc, bool) {
	// syscall rather than os.Open: a table is a few hundred files, and an
	// *os.File each (with its finalizer) is most of the cost.
	fd, err := syscall.Open("/proc/"+strconv.Itoa(pid)+"/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return Proc{}, false // gone meanwhile
	}
	n, err := syscall.Read(fd, buf)
	syscall.Close(fd)
	if err != nil || n <= 0 {
		return Proc{}, false
	}
	b := buf[:n]
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Proc{}, false
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 20 {
		return Proc{}, false
	}
	atoi := func(b []byte) int { v, _ := strconv.Atoi(string(b)); return v }
	start, _ := strconv.ParseUint(string(fields[19]), 10, 64)
	return Proc{
		PID:    pid,
		PPID:   atoi(fields[1]),
		PGID:   atoi(fields[2]),
		SID:    atoi(fields[3]),
		Start:  start,
		Zombie: fields[0][0] == 'Z' || fields[0][0] == 'X',
	}, true
}

// HasEnv reports whether entry ("NAME=value") is one of the variables pid
// was started with (/proc/<pid>/environ: the block its last exec received;
// setenv and unsetenv do not change it, a process that overwrites it in
// its memory does). A process whose environment cannot be read (another
// user's, gone, a zombie) has none.
func HasEnv(pid int, entry string) bool {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	defer f.Close()
	// Variables are NUL-terminated and may be long (up to 128 KiB each);
	// one longer than the buffer is not entry and is skipped, not kept.
	r := bufio.NewReaderSize(f, max(len(entry)+1, 4096))
	long := false
	for {
		v, err := r.ReadSlice(0)
		if errors.Is(err, bufio.ErrBufferFull) {
			long = true
			continue
		}
		if !long && string(bytes.TrimSuffix(v, []byte{0})) == entry {
			return true
		}
		long = false
		if err != nil {
			return false
		}
	}
}
