// Command floorrelay is the floor of the call-path benchmarks: the least a
// process standing between a host and one stdio MCP server can do. It
// reads Content-Length frames on stdin and writes each body to the server
// as one line; it writes each line of the server to stdout as one frame. It
// keeps no catalog and no sessions and parses no JSON, so whatever a
// sidecar process costs above it is the sidecar's own work.
//
//	floorrelay command [args...]
//
// The benchmark builds it (go build) and runs it like a sidecar process.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: floorrelay command [args...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stderr = os.Stderr
	toServer, err := cmd.StdinPipe()
	if err != nil {
		fail(err)
	}
	fromServer, err := cmd.StdoutPipe()
	if err != nil {
		fail(err)
	}
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	go func() {
		if err := framesToLines(os.Stdin, toServer); !errors.Is(err, io.EOF) {
			fmt.Fprintln(os.Stderr, "floorrelay: host -> server:", err)
		}
		toServer.Close() // the server sees EOF and exits
	}()
	if err := linesToFrames(fromServer, os.Stdout); !errors.Is(err, io.EOF) {
		fmt.Fprintln(os.Stderr, "floorrelay: server -> host:", err)
	}
	cmd.Wait()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "floorrelay:", err)
	os.Exit(1)
}

// framesToLines copies each frame's body from r to w as one line, in one
// write.
func framesToLines(r io.Reader, w io.Writer) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var body []byte
	for {
		n := -1
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return err
			}
			line = bytes.TrimRight(line, "\r\n")
			if len(line) == 0 {
				break
			}
			if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
				if n, err = strconv.Atoi(string(v)); err != nil {
					return fmt.Errorf("bad Content-Length %q", v)
				}
			}
		}
		if n < 0 {
			return errors.New("frame without Content-Length")
		}
		if cap(body) < n+1 {
			body = make([]byte, n+1)
		}
		body = body[:n+1]
		if _, err := io.ReadFull(br, body[:n]); err != nil {
			return err
		}
		body[n] = '\n'
		if _, err := w.Write(body); err != nil {
			return err
		}
	}
}

// linesToFrames copies each line from r to w as one frame, header and body
// in one write: the line is read into a buffer with room for the header in
// front.
func linesToFrames(r io.Reader, w io.Writer) error {
	const room = 32 // "Content-Length: " + 12 digits + "\r\n\r\n"
	br := bufio.NewReaderSize(r, 64<<10)
	buf := make([]byte, room, 64<<10)
	for {
		buf = buf[:room]
		for {
			chunk, err := br.ReadSlice('\n')
			buf = append(buf, chunk...)
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil {
				return err
			}
			break
		}
		body := bytes.TrimRight(buf[room:], "\r\n")
		if len(body) == 0 {
			continue
		}
		hdr := strconv.AppendInt([]byte("Content-Length: "), int64(len(body)), 10)
		hdr = append(hdr, "\r\n\r\n"...)
		start := room - len(hdr)
		copy(buf[start:], hdr)
		if _, err := w.Write(buf[start : room+len(body)]); err != nil {
			return err
		}
	}
}
