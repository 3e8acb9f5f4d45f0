// Package pgtest starts throwaway PostgreSQL servers for tests: one server
// per test package (started from TestMain with Main), a fresh database per
// test, never a system-wide server.
//
// The recipe is the one measured in shared/reference/store-notes.md §3:
// PostgreSQL refuses to run as root, so when the tests run as root (CI) the
// server binaries run as the `postgres` OS user through a credential on the
// child process, in a temporary directory handed to that user. The server
// listens only on a unix socket in that directory (no port is shared with
// anything else on the machine), with fsync off for speed. initdb dominates
// the start-up (about 1.5 s), hence one server per package.
//
// When the binaries are missing or the server cannot start, tests fail
// loudly if CI=true or SPONSON_REQUIRE_POSTGRES=1, and otherwise skip with a
// message naming what is missing: never a silent pass.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// RequireEnv, when "1", makes a server that cannot start fail the tests
// instead of skipping them. CI=true does the same.
const RequireEnv = "SPONSON_REQUIRE_POSTGRES"

// BinGlob is where Debian and Ubuntu install the server binaries; the highest
// version found is used.
const BinGlob = "/usr/lib/postgresql/*/bin"

// port is the port number of the socket file (.s.PGSQL.<port>); every server
// has its own directory, so they never collide.
const port = 5432

// Required reports whether PostgreSQL tests must fail rather than skip when no
// server can be started.
func Required() bool {
	return os.Getenv(RequireEnv) == "1" || strings.EqualFold(os.Getenv("CI"), "true")
}

// Server is a running throwaway server.
type Server struct {
	bin  string // directory of initdb and postgres
	dir  string // temporary directory: data/, the socket, log
	cred *syscall.Credential

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	log  *os.File

	dbs atomic.Int64
}

// Options tunes Start.
type Options struct {
	// Durable keeps fsync on (off by default: the tests need speed, and an
	// OS crash is not among the faults they simulate).
	Durable bool
	// MaxConnections is the server's max_connections; 300 when zero, enough
	// for dozens of concurrent sponson processes with a pool each.
	MaxConnections int
}

// BinEnv names a directory of server binaries to use instead of the ones
// under BinGlob (another distribution, a build of one's own).
const BinEnv = "SPONSON_PG_BIN"

// FindBin returns the directory of the highest installed PostgreSQL version,
// or the one BinEnv names.
func FindBin() (string, error) {
	if d := os.Getenv(BinEnv); d != "" {
		if isExec(filepath.Join(d, "postgres")) && isExec(filepath.Join(d, "initdb")) {
			return d, nil
		}
		return "", fmt.Errorf("%s=%s holds no initdb and postgres", BinEnv, d)
	}
	dirs, _ := filepath.Glob(BinGlob)
	var found []string
	for _, d := range dirs {
		if isExec(filepath.Join(d, "postgres")) && isExec(filepath.Join(d, "initdb")) {
			found = append(found, d)
		}
	}
	if len(found) == 0 {
		return "", fmt.Errorf("no PostgreSQL server binaries (initdb, postgres) under %s: install them with `apt-get install -y postgresql`", BinGlob)
	}
	sort.Slice(found, func(i, j int) bool { return version(found[i]) < version(found[j]) })
	return found[len(found)-1], nil
}

// version reads the major version from /usr/lib/postgresql/<v>/bin.
func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Start initialises a data directory in a new temporary directory and starts
// a server on it.
func Start(opts Options) (*Server, error) {
	bin, err := FindBin()
	if err != nil {
		return nil, err
	}
	// A unix socket path is limited to about 107 bytes: keep the directory
	// short whatever TMPDIR says.
	base := os.TempDir()
	if len(base) > 60 {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root: hand the directory to the
		// postgres user and run the binaries as that user.
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root needs the postgres OS user (created by the postgresql package): %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	initdb := s.command(filepath.Join(bin, "initdb"), "-D", s.dataDir(), "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	conf := []string{
		"listen_addresses = ''",
		"unix_socket_directories = '" + dir + "'",
		fmt.Sprintf("port = %d", port),
		fmt.Sprintf("max_connections = %d", cmpOr(opts.MaxConnections, 300)),
		"shared_buffers = 64MB",
		"full_page_writes = off",
		"log_min_messages = warning",
	}
	if !opts.Durable {
		// fsync off only: synchronous_commit stays on, so a commit is
		// written to the kernel before it is acknowledged and survives the
		// server being killed (the restart tests rely on that).
		conf = append(conf, "fsync = off")
	}
	f, err := os.OpenFile(filepath.Join(s.dataDir(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString("\n# pgtest\n" + strings.Join(conf, "\n") + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("configure the server: %w", err)
	}
	if err := s.start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }

// command prepares a server binary to run as the server's OS user, in its
// directory (postgres cannot chdir into root's home), as a process group of
// its own that receives SIGQUIT (immediate shutdown) when the test binary
// dies.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = s.dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "TZ=UTC"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true, Pdeathsig: syscall.SIGQUIT}
	return cmd
}

// start starts postgres on the existing data directory and waits until it
// accepts connections.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("server already running")
	}
	logf, err := os.OpenFile(filepath.Join(s.dir, "log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := s.command(filepath.Join(s.bin, "postgres"), "-D", s.dataDir())
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start postgres: %w", err)
	}
	done := make(chan struct{})
	// Wait only reaps the server: an exit during start-up is reported from
	// its log, and an exit after Stop is the one we asked for.
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done, s.log = cmd, done, logf

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		c, err := pgx.Connect(ctx, s.DSN("postgres"))
		if err == nil {
			c.Close(ctx)
			return nil
		}
		select {
		case <-done:
			s.cmd = nil
			logf.Close()
			return fmt.Errorf("postgres exited during start-up:\n%s", s.logTail())
		case <-ctx.Done():
			// stopLocked has nothing to report; the timeout is the error.
			_ = s.stopLocked(syscall.SIGQUIT)
			return fmt.Errorf("postgres did not accept connections within 60 s: %v\n%s", err, s.logTail())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}

// Stop stops the server with an immediate shutdown (SIGQUIT: what a crash
// looks like to clients) and keeps the data directory, so Restart can start
// it again.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked(syscall.SIGQUIT)
}

// stopLocked sends sig to the server and waits for it to exit, killing its
// process group after 30 s. It returns nil in every case: a server that is
// gone already counts as stopped.
func (s *Server) stopLocked(sig syscall.Signal) error {
	if s.cmd == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
	s.cmd = nil
	s.log.Close()
	return nil
}

// Restart stops the server (immediate shutdown) and starts it again on the
// same data directory and socket; clients see their connections drop and
// the server recovering.
func (s *Server) Restart() error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.start()
}

// Start starts a stopped server again.
func (s *Server) Start() error { return s.start() }

// Close stops the server and removes its directory.
func (s *Server) Close() {
	_ = s.Stop() // returns nil in every case: see stopLocked
	os.RemoveAll(s.dir)
}

// Dir is the server's temporary directory, which holds its socket.
func (s *Server) Dir() string { return s.dir }

// DSN returns a key/value connection string for database db.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=%s sslmode=disable", s.dir, port, db)
}

// URL returns a postgres:// URL for database db, the form --store takes.
func (s *Server) URL(db string) string {
	q := url.Values{"host": {s.dir}, "port": {strconv.Itoa(port)}, "sslmode": {"disable"}}
	return "postgres://postgres@/" + db + "?" + q.Encode()
}

// Exec runs statements on database db as the superuser.
func (s *Server) Exec(ctx context.Context, db, sql string, args ...any) error {
	c, err := pgx.Connect(ctx, s.DSN(db))
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, sql, args...)
	return err
}

// QueryInt runs a query returning one integer (a count) on database db.
func (s *Server) QueryInt(ctx context.Context, db, sql string, args ...any) (int64, error) {
	c, err := pgx.Connect(ctx, s.DSN(db))
	if err != nil {
		return 0, err
	}
	defer c.Close(ctx)
	var n int64
	err = c.QueryRow(ctx, sql, args...).Scan(&n)
	return n, err
}

// TerminateBackends ends, with pg_terminate_backend, every connection whose
// application_name is app, as an administrator or a failing proxy would,
// and returns how many there were.
func (s *Server) TerminateBackends(ctx context.Context, app string) (int, error) {
	c, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return 0, err
	}
	defer c.Close(ctx)
	var n int
	err = c.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
  FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()`, app).Scan(&n)
	return n, err
}

// CreateDatabase creates a new empty database and returns its name.
func (s *Server) CreateDatabase(ctx context.Context) (string, error) {
	name := fmt.Sprintf("t%d_%d", os.Getpid(), s.dbs.Add(1))
	// FILE_COPY copies template0's files instead of WAL-logging every page:
	// several times faster with fsync off.
	if err := s.Exec(ctx, "postgres", "CREATE DATABASE "+name+" TEMPLATE template0 STRATEGY FILE_COPY"); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return name, nil
}

// NewDatabase creates a database for one test and drops it when the test
// ends (terminating what still uses it).
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name, err := s.CreateDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Exec(ctx, "postgres", "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("drop database %s: %v", name, err)
		}
	})
	return name
}

// Package state of Main.
var (
	shared   *Server
	startErr error
)

// Main starts the package's server, runs the tests and stops it; use it as
// `func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }`. When the server
// cannot start it prints why, and returns 1 when Required; otherwise the
// tests run and Shared skips each of them with the reason.
func Main(m *testing.M) int {
	shared, startErr = Start(Options{Durable: os.Getenv("PGTEST_DURABLE") == "1"})
	if startErr != nil {
		if Required() {
			fmt.Fprintf(os.Stderr, "FAIL: PostgreSQL tests need a server and none could be started (%s or CI=true is set):\n%v\n", RequireEnv, startErr)
			return 1
		}
		fmt.Fprintf(os.Stderr, "pgtest: no PostgreSQL server, the tests that need one will skip: %v\n", startErr)
	}
	code := m.Run()
	if shared != nil {
		shared.Close()
	}
	return code
}

// Shared returns the package's server started by Main, skipping the test
// (or failing it when Required) when there is none.
func Shared(t testing.TB) *Server {
	t.Helper()
	if shared != nil {
		return shared
	}
	why := startErr
	if why == nil {
		why = errors.New("pgtest.Main was not called from TestMain")
	}
	if Required() {
		t.Fatalf("PostgreSQL is required (%s=1 or CI=true) but no server is running: %v", RequireEnv, why)
	}
	t.Skipf("needs PostgreSQL: %v (set %s=1 to fail instead of skipping)", why, RequireEnv)
	return nil
}

// Own starts a server for one test, for tests that stop or restart it, and
// closes it when the test ends. It fails or skips like Shared.
func Own(t testing.TB) *Server {
	t.Helper()
	s, err := Start(Options{})
	if err != nil {
		if Required() {
			t.Fatalf("PostgreSQL is required (%s=1 or CI=true) but the server did not start: %v", RequireEnv, err)
		}
		t.Skipf("needs PostgreSQL: %v (set %s=1 to fail instead of skipping)", err, RequireEnv)
	}
	t.Cleanup(s.Close)
	return s
}
