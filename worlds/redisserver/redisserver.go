// Package redisserver starts a throw-away redis-server for a World package
// that needs one (stormctl certify --start-redis): on a free port of
// 127.0.0.1, without persistence, in a temp directory of its own, stopped
// (and its directory removed) by Stop, and killed by the kernel if
// stormctl dies first (Linux).
package redisserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/stormctl/stormctl/worlds"
)

// ErrNoRedis is returned when redis-server is not on PATH.
var ErrNoRedis = worlds.Prerequisite("--start-redis needs redis-server on PATH (apt install redis-server), or give a server of yours with --world-env")

// Server is a running redis-server.
type Server struct {
	cmd  *exec.Cmd
	dir  string
	port int
	done chan error
}

// Start starts redis-server and waits until it answers PING.
func Start(ctx context.Context) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoRedis
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("redis-server: a free port: %w", err)
	}
	dir, err := os.MkdirTemp("", "stormctl-redis-")
	if err != nil {
		return nil, fmt.Errorf("redis-server: %w", err)
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("redis-server: start: %w", err)
	}
	s := &Server{cmd: cmd, dir: dir, port: port, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := ping(s.Addr()); err == nil {
			return s, nil
		} else if time.Now().After(deadline) || ctx.Err() != nil {
			_ = s.Stop()
			return nil, fmt.Errorf("redis-server on port %d did not answer PING: %w", port, errors.Join(err, ctx.Err()))
		}
		select {
		case err := <-s.done:
			os.RemoveAll(dir)
			return nil, fmt.Errorf("redis-server exited at start: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr() }

// Stop kills the server, waits for it and removes its directory.
func (s *Server) Stop() error {
	_ = s.cmd.Process.Kill()
	<-s.done
	return os.RemoveAll(s.dir)
}

func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
