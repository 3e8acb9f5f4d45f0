// Package azuritetest runs Azure's storage emulator for tests: Azurite's
// blob service (installed by `make tools` from the npm registry into the
// cache, linked as .tools/bin/azurite-blob) in memory on loopback, its
// telemetry off. Each Server has its own port and its own container; Stop
// kills it.
//
// When the binary is missing, tests fail if CI=true or
// SPONSON_REQUIRE_AZURITE=1, and otherwise skip naming what is missing:
// never a silent pass.
//
// What the emulator does not prove (docs/design.md §5.8): it has no RBAC
// and no Entra ID tokens over plain HTTP, so only the shared key is
// exercised; the store uses no blob lease, so Azurite's lease differences do
// not arise.
package azuritetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// Environment variables of the harness.
const (
	// BinEnv names the azurite-blob binary; by default
	// .tools/bin/azurite-blob of the module.
	BinEnv = "SPONSON_TEST_AZURITE"
	// RequireEnv, when "1", makes a missing binary fail the tests.
	RequireEnv = "SPONSON_REQUIRE_AZURITE"
)

// Azurite's well-known development account and key (public, in Azure's
// documentation).
const (
	Account = "devstoreaccount1"
	Key     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Container is the container of every server.
const Container = "sponson"

// Server is a running Azurite blob service.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	Port int
	// Endpoint is the account's blob service URL.
	Endpoint string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  bytes.Buffer
}

func required() bool {
	return os.Getenv(RequireEnv) == "1" || strings.EqualFold(os.Getenv("CI"), "true")
}

// Binary returns the azurite-blob binary, or skips (fails in CI) without one.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(BinEnv); p != "" {
		return p
	}
	dir, err := os.Getwd()
	if err == nil {
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				p := filepath.Join(dir, ".tools", "bin", "azurite-blob")
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
	msg := "no azurite-blob: run `make tools` (it installs .tools/bin/azurite-blob) or set " + BinEnv
	if required() {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Start starts a server with an empty container, stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, bin: Binary(t), dir: t.TempDir()}
	t.Cleanup(func() { _ = s.Stop() })
	var err error
	for range 3 {
		if s.Port, err = freePort(); err != nil {
			t.Fatal(err)
		}
		s.Endpoint = "http://127.0.0.1:" + strconv.Itoa(s.Port) + "/" + Account
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

// client is the container's client with the development key.
func (s *Server) client() (*container.Client, error) {
	cred, err := container.NewSharedKeyCredential(Account, Key)
	if err != nil {
		return nil, err
	}
	return container.NewClientWithSharedKeyCredential(s.Endpoint+"/"+Container, cred, nil)
}

// start starts the server and waits until it has created the container.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("azurite is running")
	}
	s.log.Reset()
	cmd := exec.Command(s.bin, "--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(s.Port),
		"--inMemoryPersistence", "--disableTelemetry", "--silent", "--skipApiVersionCheck")
	cmd.Dir = s.dir // in memory, but it may still write a debug or config file
	cmd.Stdout, cmd.Stderr = &s.log, &s.log
	// A test binary that dies (a panic, a timeout) runs no cleanup: the
	// kernel kills the server with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start azurite: %w", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	done := s.done
	go func() { _ = cmd.Wait(); close(done) }()
	c, err := s.client()
	if err != nil {
		return err
	}
	for {
		// Wait for the condition (the container is made) or for it to exit.
		// A create whose answer was cut off may have made it: the server
		// is ours and new, so "already exists" is our own container. The
		// attempt's timeout only frees a request to a server still
		// starting; on a loaded machine Node's first answers are slow.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.Create(ctx, nil)
		cancel()
		if err == nil || bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
			return nil
		}
		select {
		case <-done:
			s.cmd = nil
			return fmt.Errorf("azurite exited: %s", s.log.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
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
func (s *Server) StoreURL(prefix string) string {
	return "azblob://" + Account + "/" + Container + "/" + prefix + "?endpoint=" + s.Endpoint
}

// Getenv is an environment with the development key, for
// azblobstore.WithGetenv.
func (s *Server) Getenv(name string) string {
	if name == "AZURE_STORAGE_KEY" {
		return Key
	}
	return ""
}

// Env is the environment giving a process the development key.
func (s *Server) Env() []string { return []string{"AZURE_STORAGE_KEY=" + Key} }
