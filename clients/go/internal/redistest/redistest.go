// Package redistest starts real servers on free 127.0.0.1 ports for the
// integration tests: the binaries of REDIS_SERVERS (space-separated; by
// default the Makefile's four: redis-server on PATH and tmp/bin's
// valkey-server, redis-server-8.2, valkey-server-8.1), each with and
// without the module (RL_MODULE, by default target/release/
// libredis_ratelimit.so). A missing binary or module fails the test and
// names the set-up command; nothing is skipped, nothing installed.
package redistest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Root is the repository's directory (this file is clients/go/internal/redistest/).
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", "..", ".."))
}

// Binaries are the servers of the matrix.
func Binaries() []string {
	if s := strings.Fields(os.Getenv("REDIS_SERVERS")); len(s) > 0 {
		return s
	}
	bin := filepath.Join(Root(), "tmp", "bin")
	return []string{"redis-server", filepath.Join(bin, "valkey-server"), filepath.Join(bin, "redis-server-8.2"), filepath.Join(bin, "valkey-server-8.1")}
}

// Module is the module's path.
func Module() string {
	if m := os.Getenv("RL_MODULE"); m != "" {
		return m
	}
	return filepath.Join(Root(), "target", "release", "libredis_ratelimit.so")
}

// Server is a running server.
type Server struct {
	Binary string
	Module bool
	Addr   string
	Port   int
	cmd    *exec.Cmd
	log    *bytes.Buffer
	waited chan struct{}
}

// Name is the binary's base name, with "+module" when the module is loaded.
func (s *Server) Name() string {
	n := filepath.Base(s.Binary)
	if s.Module {
		return n + "+module"
	}
	return n
}

// Client is a new go-redis client of the server, closed with the test.
func (s *Server) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Launch starts binary (with the module when module is true, and extra
// configuration arguments) and waits for it to answer PING.
func Launch(binary string, module bool, extra ...string) (*Server, error) {
	var load []string
	if module {
		load = []string{}
	}
	return launch(binary, nil, load, extra)
}

// launch starts binary with head first (a configuration file and
// --sentinel), then the port and the test settings (not for a sentinel),
// then the module with its arguments load (nil: no module) and extra.
func launch(binary string, head, load, extra []string) (*Server, error) {
	path, err := exec.LookPath(binary)
	if err != nil {
		return nil, fmt.Errorf("the server %s is missing (%v): run scripts/deps.sh --test, or name servers in REDIS_SERVERS", binary, err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{}, head...)
	args = append(args, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--daemonize", "no", "--protected-mode", "no")
	if head == nil {
		args = append(args, "--save", "", "--appendonly", "no")
	}
	if load != nil {
		m := Module()
		if _, err := os.Stat(m); err != nil {
			return nil, fmt.Errorf("the module %s is missing: run cargo build --release (or set RL_MODULE)", m)
		}
		args = append(append(args, "--loadmodule", m), load...)
	}
	args = append(args, extra...)
	s := &Server{Binary: binary, Module: load != nil, Port: port, Addr: "127.0.0.1:" + strconv.Itoa(port), log: &bytes.Buffer{}, waited: make(chan struct{})}
	s.cmd = exec.Command(path, args...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = s.cmd.Wait(); close(s.waited) }()
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return s, nil
		}
		select {
		case <-s.waited:
			return nil, fmt.Errorf("%s %s exited: %s", binary, strings.Join(args, " "), s.log.String())
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("%s did not answer PING within 15 s: %v", binary, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Start launches a server stopped with the test; a failure fails it.
func Start(t testing.TB, binary string, module bool, extra ...string) *Server {
	t.Helper()
	s, err := Launch(binary, module, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Stop kills the server and waits for it.
func (s *Server) Stop() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
	}
	<-s.waited
}

// Pause stops (SIGSTOP) the server: connections stay open, nothing answers.
func (s *Server) Pause() { _ = s.cmd.Process.Signal(stopSignal) }

// Resume continues a paused server.
func (s *Server) Resume() { _ = s.cmd.Process.Signal(contSignal) }

var (
	matrixOnce sync.Once
	matrix     []*Server
	matrixErr  error
)

// Matrix is every binary of Binaries, each with and without the module,
// started once per test binary (StopMatrix, from TestMain, stops them).
func Matrix(t testing.TB) []*Server {
	t.Helper()
	matrixOnce.Do(func() {
		for _, b := range Binaries() {
			for _, m := range []bool{true, false} {
				s, err := Launch(b, m)
				if err != nil {
					matrixErr = err
					return
				}
				matrix = append(matrix, s)
			}
		}
	})
	if matrixErr != nil {
		t.Fatal(matrixErr)
	}
	return matrix
}

// StopMatrix stops the servers Matrix started.
func StopMatrix() {
	for _, s := range matrix {
		s.Stop()
	}
}
