// Package gcstest runs a Google Cloud Storage emulator for tests:
// fake-gcs-server (built by `make tools` into .tools/bin, from the Go module
// proxy) with its in-memory backend on loopback. Each Server has its own
// port and its own bucket; Stop kills it.
//
// When the binary is missing, tests fail if CI=true or
// SPONSON_REQUIRE_FAKE_GCS=1, and otherwise skip naming what is missing:
// never a silent pass.
//
// What the emulator does not prove (docs/design.md §5.7): it checks
// ifGenerationMatch on uploads (0 included), which is every conditional
// write of the store, but not on deletes, rewrites or compose, which the
// store does not use (v1.56.1, the newest release on the Go module proxy:
// its DELETE handler reads only the generation parameter, so `sponson store
// verify` finds its conditional delete not held); it ignores ifGenerationNotMatch on reads (200, not
// 304), so the store's own comparison of generations is what is tested
// there; it has no IAM, so a 403 is never seen from it; and it takes any
// token, so a refused credential is proved against a token endpoint of the
// test's own.
package gcstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Environment variables of the harness.
const (
	// BinEnv names the fake-gcs-server binary; by default
	// .tools/bin/fake-gcs-server of the module.
	BinEnv = "SPONSON_TEST_FAKE_GCS"
	// RequireEnv, when "1", makes a missing binary fail the tests.
	RequireEnv = "SPONSON_REQUIRE_FAKE_GCS"
)

// Bucket is the bucket of every server.
const Bucket = "sponson"

// Server is a running fake-gcs-server.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	Port int
	// Host is host:port, the value of STORAGE_EMULATOR_HOST.
	Host string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  bytes.Buffer
}

func required() bool {
	return os.Getenv(RequireEnv) == "1" || strings.EqualFold(os.Getenv("CI"), "true")
}

// Binary returns the fake-gcs-server binary, or skips (fails in CI)
// without one.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(BinEnv); p != "" {
		return p
	}
	dir, err := os.Getwd()
	if err == nil {
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				p := filepath.Join(dir, ".tools", "bin", "fake-gcs-server")
				if _, err := os.Stat(p); err == nil {
					return p
				}
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	msg := "no fake-gcs-server: run `make tools` (it builds .tools/bin/fake-gcs-server) or set " + BinEnv
	if required() {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Start starts a server with an empty bucket, stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, bin: Binary(t), dir: t.TempDir()}
	// The seed directory: each folder in it is a bucket at start.
	if err := os.MkdirAll(filepath.Join(s.dir, "seed", Bucket), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	// The port is free when chosen; another process may take it before the
	// server binds it, so a start that fails is tried on another port.
	var err error
	for range 3 {
		if s.Port, err = freePort(); err != nil {
			t.Fatal(err)
		}
		s.Host = "127.0.0.1:" + strconv.Itoa(s.Port)
		if err = s.start(); err == nil {
			return s
		}
	}
	t.Fatal(err)
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, fmt.Errorf("listener address %v is not TCP", l.Addr())
	}
	return addr.Port, nil
}

// start starts the server and waits until its bucket answers.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("fake-gcs-server is running")
	}
	s.log.Reset()
	cmd := exec.Command(s.bin, "-scheme", "http", "-host", "127.0.0.1", "-port", strconv.Itoa(s.Port),
		"-backend", "memory", "-data", filepath.Join(s.dir, "seed"), "-public-host", s.Host,
		"-external-url", "http://"+s.Host, "-log-level", "error")
	cmd.Stdout, cmd.Stderr = &s.log, &s.log
	// A test binary that dies (a panic, a timeout) runs no cleanup: the
	// kernel kills the server with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start fake-gcs-server: %w", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	done := s.done
	go func() { _ = cmd.Wait(); close(done) }()
	url := "http://" + s.Host + "/storage/v1/b/" + Bucket
	for {
		// Wait for the condition (the bucket answers) or for it to exit.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		ok := bucketAnswers(ctx, url)
		cancel()
		if ok {
			return nil
		}
		select {
		case <-done:
			s.cmd = nil
			return fmt.Errorf("fake-gcs-server exited: %s", s.log.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func bucketAnswers(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Stop kills the server and waits for it.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
	return nil
}

// StoreURL is the --store URL of prefix on the server.
func (s *Server) StoreURL(prefix string) string { return "gs://" + Bucket + "/" + prefix }

// Getenv is an environment with STORAGE_EMULATOR_HOST set to the server,
// for gcsstore.WithGetenv.
func (s *Server) Getenv(name string) string {
	if name == "STORAGE_EMULATOR_HOST" {
		return s.Host
	}
	return ""
}

// Env is the environment giving a process the server.
func (s *Server) Env() []string { return []string{"STORAGE_EMULATOR_HOST=" + s.Host} }
