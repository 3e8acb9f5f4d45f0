// Package gwtest runs a real S3-compatible server for tests: versitygw
// (built by `make tools` into .tools/bin, from the Go module proxy) serving a
// posix directory on loopback, with its own IAM directory so that tests can
// add users and bucket policies. Each Server has its own directory and port;
// Stop and Start kill and restart it on the same data, Pause and Resume
// freeze it.
//
// When the binary is missing, tests fail if CI=true or
// SPONSON_REQUIRE_VERSITYGW=1, and otherwise skip naming what is missing:
// never a silent pass.
package gwtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Environment variables of the harness.
const (
	// BinEnv names the versitygw binary; by default .tools/bin/versitygw
	// of the module.
	BinEnv = "SPONSON_TEST_VERSITYGW"
	// RequireEnv, when "1", makes a missing binary fail the tests.
	RequireEnv = "SPONSON_REQUIRE_VERSITYGW"
)

// Bucket is the bucket of every server.
const Bucket = "sponson"

// Server is a running versitygw.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	Port int
	URL  string
	// Access and Secret are the root account's credentials, drawn per
	// server: a client can never reach another test's server by mistake
	// (a port taken over between two tests answers with 403).
	Access, Secret string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  bytes.Buffer
}

func required() bool {
	return os.Getenv(RequireEnv) == "1" || strings.EqualFold(os.Getenv("CI"), "true")
}

// Binary returns the versitygw binary, or skips (fails in CI) without one.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(BinEnv); p != "" {
		return p
	}
	dir, err := os.Getwd()
	if err == nil {
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				p := filepath.Join(dir, ".tools", "bin", "versitygw")
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
	msg := "no versitygw: run `make tools` (it builds .tools/bin/versitygw) or set " + BinEnv
	if required() {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Start starts a server with an empty bucket, stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, bin: Binary(t), dir: t.TempDir(), Access: "root" + randHex(8), Secret: randHex(20)}
	for _, d := range []string{"data", "iam"} {
		if err := os.MkdirAll(filepath.Join(s.dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = s.Stop() })
	// The port is free when chosen; another process may take it before the
	// server binds it, so a start that fails is tried on another port.
	var err error
	for range 3 {
		if s.Port, err = freePort(); err != nil {
			t.Fatal(err)
		}
		s.URL = "http://127.0.0.1:" + strconv.Itoa(s.Port)
		if err = s.Start(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(Bucket)}); err != nil {
		t.Fatalf("create the bucket: %v", err)
	}
	return s
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

// Start (re)starts the server on its data and waits until it answers.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("versitygw is running")
	}
	cmd := exec.Command(s.bin, "--access", s.Access, "--secret", s.Secret, "--port", "127.0.0.1:"+strconv.Itoa(s.Port),
		"--iam-dir", filepath.Join(s.dir, "iam"), "posix", filepath.Join(s.dir, "data"))
	cmd.Stdout, cmd.Stderr = &s.log, &s.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start versitygw: %w", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	done := s.done
	go func() { _ = cmd.Wait(); close(done) }()
	c := s.Client()
	for {
		// Wait for the condition (it answers) or for it to exit.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.ListBuckets(ctx, &s3.ListBucketsInput{})
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			s.cmd = nil
			return fmt.Errorf("versitygw exited: %s", s.log.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop kills the server (SIGKILL: a crash, nothing flushed) and waits for it.
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

// Pause stops the server process (SIGSTOP): connections hang, nothing is
// refused. Resume continues it.
func (s *Server) Pause() error  { return s.signal(syscall.SIGSTOP) }
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("versitygw is not running")
	}
	return s.cmd.Process.Signal(sig)
}

// StoreURL is the --store URL of prefix on the server.
func (s *Server) StoreURL(prefix string) string {
	return "s3://" + Bucket + "/" + prefix + "?endpoint=" + s.URL
}

// Env is the environment giving a process the credentials of access.
func Env(access, secret string) []string {
	return []string{"AWS_ACCESS_KEY_ID=" + access, "AWS_SECRET_ACCESS_KEY=" + secret, "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true"}
}

// RootEnv is Env of the server's root account.
func (s *Server) RootEnv() []string { return Env(s.Access, s.Secret) }

// RootConfig is Config of the server's root account.
func (s *Server) RootConfig() aws.Config { return Config(s.Access, s.Secret) }

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails; it crashes instead
	return hex.EncodeToString(b)
}

// Config is an AWS configuration with access's credentials.
func Config(access, secret string) aws.Config {
	return aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider(access, secret, "")}
}

// Client is an S3 client of the root account.
func (s *Server) Client() *s3.Client {
	return s3.NewFromConfig(s.RootConfig(), func(o *s3.Options) {
		o.BaseEndpoint = aws.String(s.URL)
		o.UsePathStyle = true
	})
}

// AddUser creates a user account (role user) that owns nothing and may do
// only what bucket policies grant it.
func (s *Server) AddUser(access, secret string) error {
	out, err := exec.Command(s.bin, "admin", "--access", s.Access, "--secret", s.Secret, "--endpoint-url", s.URL,
		"create-user", "--access", access, "--secret", secret, "--role", "user").CombinedOutput()
	if err != nil {
		return fmt.Errorf("versitygw admin create-user: %w: %s", err, out)
	}
	return nil
}

// SetPolicy sets the bucket's policy document.
func (s *Server) SetPolicy(policy string) error {
	_, err := s.Client().PutBucketPolicy(context.Background(), &s3.PutBucketPolicyInput{Bucket: aws.String(Bucket), Policy: aws.String(policy)})
	return err
}
