package gitstore

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/gitcli"
)

// remoteName is the name the scratch repository knows the remote by. Its URL
// reaches git only through the environment (GIT_CONFIG_*), never the command
// line (other users of the machine can read command lines) and never a file.
const remoteName = "sponson"

// gitEnv builds the environment of every git command (gitcli.Environ), with
// the remote's URL and extra configuration as GIT_CONFIG_* entries.
func gitEnv(remote string, extra [][2]string) []string {
	cfg := append(append([][2]string{}, extra...), [2]string{"remote." + remoteName + ".url", remote})
	return gitcli.Environ(cfg...)
}

// scratchConfig is written into the scratch repository: no automatic
// maintenance (it lives for one process), no commit graph, no hooks.
const scratchConfig = `
[gc]
	auto = 0
[maintenance]
	auto = false
[fetch]
	writeCommitGraph = false
	showForcedUpdates = false
[core]
	hooksPath = /dev/null
	logAllRefUpdates = false
[advice]
	pushUpdateRejected = false
	detachedHead = false
`

// run runs git in the scratch repository and returns its output. stderr is
// returned scrubbed of credentials; the error is the process's.
func (s *Store) run(ctx context.Context, stdin []byte, args ...string) (stdout []byte, stderr string, err error) {
	s.countSpawn(args[0])
	// A bound for a command that hangs (a network that swallows packets):
	// well beyond the budget, so that a large state on a slow link still
	// goes through.
	ctx, cancel := context.WithTimeout(ctx, max(2*s.budget, 2*time.Minute))
	defer cancel()
	out, errOut, err := gitcli.Cmd{GitDir: s.dir, Env: s.env, Stdin: stdin, Args: args, Scrub: s.scrub}.Run(ctx)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, "", errcode.Wrap(errcode.StoreUnavailable, err, "the git store needs the git command line").
				WithHint("Install git (2.29 or newer) on PATH.")
		}
		if ctx.Err() != nil {
			return nil, errOut, ctxError(ctx, "git "+args[0])
		}
		return nil, "", errcode.Wrap(errcode.StoreUnavailable, err, "run git %s", args[0])
	}
	if err != nil && ctx.Err() != nil {
		return out, errOut, ctxError(ctx, "git "+args[0])
	}
	return out, errOut, err
}

func (s *Store) countSpawn(sub string) {
	s.mu.Lock()
	s.spawned[sub]++
	s.mu.Unlock()
}

// ctxError is the error of a ctx that ended while the store worked or waited:
// STORE_CONTENDED for a deadline, INTERRUPTED for a cancellation, with
// ctx.Err() in the chain for errors.Is.
func ctxError(ctx context.Context, what string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errcode.Wrap(errcode.StoreContended, ctx.Err(), "gave up on %s", what)
	}
	return errcode.Wrap(errcode.Interrupted, ctx.Err(), "interrupted during %s", what)
}

// newScrubber returns a function that removes the remote's credentials from
// a text (gitcli.Scrubber).
func newScrubber(remote string) func(string) string { return gitcli.Scrubber(remote) }

// Redact returns remote without credentials, for messages: the password is
// dropped, and an HTTP(S) user name without password (a token) becomes ***.
func Redact(remote string) string {
	u, err := url.Parse(remote)
	if err != nil || u.User == nil {
		return remote
	}
	name := u.User.Username()
	if _, hasPw := u.User.Password(); !hasPw && (u.Scheme == "http" || u.Scheme == "https") {
		name = "***"
	}
	if name == "" {
		u.User = nil
	} else {
		u.User = url.User(name)
	}
	return strings.Replace(u.String(), "%2A%2A%2A@", "***@", 1)
}

// failure is what a failed git command means for the store.
type failure int

const (
	failOther      failure = iota // permanent: report STORE_UNAVAILABLE now
	failTransient                 // network trouble: retry within the budget
	failPermission                // authentication or authorization
	failGone                      // the ref we asked for does not exist (any more)
)

// The expressions of this package are compiled on first use: most runs
// never read a git failure, and every sponson process paid for compiling
// them at start (docs/design.md §8).
var (
	permissionRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)permission denied|permission to .* denied|insufficient permission|authentication failed|` +
			`could not read (username|password)|terminal prompts disabled|returned error: 40[13]|\b40[13] (forbidden|unauthorized)|` +
			`access denied|not authori[sz]ed|unauthori[sz]ed|forbidden|repository not found|write access to repository not granted|` +
			`returned error: 404|host key verification failed|the requested url returned error: 40[134]`)
	})
	goneRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)couldn't find remote ref`)
	})
	transientRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)could not resolve host|connection (refused|reset|timed out)|timed out|` +
			`early eof|remote end hung up|rpc failed|returned error: 5\d\d|temporary failure|network is unreachable|` +
			`couldn't connect|failed to connect|broken pipe|unexpected disconnect|transfer closed|ssl|tls`)
	})
)

func classify(stderr string) failure {
	switch {
	case permissionRe().MatchString(stderr):
		return failPermission
	case goneRe().MatchString(stderr):
		return failGone
	case transientRe().MatchString(stderr):
		return failTransient
	default:
		return failOther
	}
}

// summary shortens git's stderr for a message: its last meaningful lines.
func summary(stderr string) string {
	var lines []string
	for _, l := range strings.Split(stderr, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "Please make sure") || strings.HasPrefix(l, "and the repository exists") || l == "Done" {
			continue
		}
		lines = append(lines, l)
	}
	if len(lines) > 4 {
		lines = lines[len(lines)-4:]
	}
	out := strings.Join(lines, "; ")
	if len(out) > 600 {
		out = out[:600] + "..."
	}
	if out == "" {
		out = "git gave no reason"
	}
	return out
}

const permissionHint = "The git store needs to read and push branches sponson-stacks/* and sponson-layout/* of the remote: in GitHub Actions give the job " +
	"`permissions: contents: write` (and allow those branches in rulesets); elsewhere check the remote's URL and the runner's credentials."

// remoteError turns a failed remote command into a coded error.
func (s *Store) remoteError(op, branch, stderr string, f failure, err error) *errcode.Error {
	var e *errcode.Error
	switch f {
	case failPermission:
		e = errcode.New(errcode.StorePermission, "the remote %s refused %s of %s: %s", s.display, op, branch, summary(stderr)).WithHint(permissionHint)
	default:
		e = errcode.New(errcode.StoreUnavailable, "%s of %s on the remote %s failed: %s", op, branch, s.display, summary(stderr))
	}
	var ce *errcode.Error
	if errors.As(err, &ce) {
		return ce // the run itself failed (ctx, git missing): that error says more
	}
	return e.With("remote", s.display).With("branch", branch)
}

// lsRemote lists the remote refs matching pattern (a ref or a glob).
func (s *Store) lsRemote(ctx context.Context, pattern string) (map[string]string, error) {
	out, stderr, err := s.run(ctx, nil, "ls-remote", "--refs", remoteName, pattern)
	if err != nil {
		return nil, &gitFailure{op: "listing", stderr: stderr, f: classify(stderr), err: err}
	}
	refs := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		id, ref, ok := strings.Cut(line, "\t")
		if ok && len(id) == 40 {
			refs[ref] = id
		}
	}
	return refs, nil
}

// fetch brings the tips of refs (depth 1: the store never reads history)
// into the scratch repository, writing no refs; haves are commits the store
// already holds, so that unchanged blobs (a large state) are not sent again.
// The shallow file is one per repository, so fetches take turns.
func (s *Store) fetch(ctx context.Context, refs, haves []string) error {
	s.fetchMu.Lock()
	defer s.fetchMu.Unlock()
	args := []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--refmap=", "--depth=1", "--no-recurse-submodules", "--stdin"}
	for _, h := range haves {
		args = append(args, "--negotiation-tip="+h)
	}
	args = append(args, remoteName)
	_, stderr, err := s.run(ctx, []byte(strings.Join(refs, "\n")+"\n"), args...)
	if err != nil {
		return &gitFailure{op: "fetching", stderr: stderr, f: classify(stderr), err: err}
	}
	return nil
}

// gitFailure is a failed remote command, classified.
type gitFailure struct {
	op     string
	stderr string
	f      failure
	err    error
}

func (g *gitFailure) Error() string { return g.op + ": " + summary(g.stderr) }
func (g *gitFailure) Unwrap() error { return g.err }

// pushOutcome is what became of a push.
type pushOutcome int

const (
	pushed  pushOutcome = iota // the ref now names our commit
	raced                      // the ref was not at the tip we built on
	refused                    // a hook or rule of the remote refused it
	failed                     // the push did not get through; see the error
)

// push publishes commit as ref if ref is still at expect ("" = must not
// exist): git's compare-and-swap. reason is the remote's word on a refusal.
func (s *Store) push(ctx context.Context, ref, expect, commit string) (outcome pushOutcome, reason string, err error) {
	out, stderr, err := s.run(ctx, nil, "push", "--porcelain", "--no-verify",
		"--force-with-lease="+ref+":"+expect, remoteName, commit+":"+ref)
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.SplitN(line, "\t", 3)
		if len(fields) != 3 || !strings.HasSuffix(fields[1], ":"+ref) || len(fields[0]) != 1 {
			continue
		}
		flag, status := fields[0], fields[2]
		switch {
		case strings.ContainsAny(flag, " +*"):
			return pushed, "", nil
		case flag == "=":
			// The remote already has this very commit. Every commit
			// carries a nonce, so only our own earlier attempt can have
			// put it there: see the package comment on identical commits.
			return pushed, "", nil
		case strings.Contains(status, "[remote rejected]"):
			if raceRe().MatchString(status) {
				return raced, status + heldLock(stderr), nil
			}
			return refused, remoteReason(status, stderr), nil
		case strings.Contains(status, "[rejected]"):
			return raced, status, nil
		default: // [remote failure], [no match], ...
			return failed, status, &gitFailure{op: "pushing", stderr: stderr + "\n" + status, f: classify(stderr + status), err: err}
		}
	}
	if err == nil {
		err = errors.New("git push printed no status for " + ref)
	}
	return failed, "", &gitFailure{op: "pushing", stderr: stderr, f: classify(stderr), err: err}
}

// raceRe finds remote rejections that mean someone else moved the ref first.
var raceRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)failed to lock|cannot lock ref|failed to update ref|incorrect old value|is at [0-9a-f]+ but expected|reference already exists|stale info`)
})

// heldLock is, when the remote could not take a ref's lock because its lock
// file exists, " (lock file PATH exists)": a push that crashed on the
// remote's side (killed with its client, on a local remote) leaves the lock
// behind, and no later push can move the ref until someone removes it. A
// live push holds the lock for milliseconds, so the store retries as for a
// race and, if the budget ends with the lock still there, names the file
// (docs/design.md §5.3).
func heldLock(stderr string) string {
	if m := lockRe().FindStringSubmatch(stderr); m != nil {
		return " (lock file " + filepath.Clean(m[1]) + " exists)"
	}
	return ""
}

// lockOf is the lock file a raced push's reason names, "" if none.
func lockOf(reason string) string {
	if i := strings.Index(reason, " (lock file "); i >= 0 {
		return reason[i:]
	}
	return ""
}

var lockRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`Unable to create '([^']+\.lock)': File exists`)
})

// remoteReason is the remote's refusal with what its hooks printed.
func remoteReason(status, stderr string) string {
	reason := status
	if i := strings.Index(status, "("); i >= 0 {
		reason = strings.TrimSuffix(status[i+1:], ")")
	}
	var said []string
	for _, l := range strings.Split(stderr, "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(l), "remote:"); ok && strings.TrimSpace(m) != "" {
			said = append(said, strings.TrimSpace(m))
		}
	}
	if len(said) > 0 {
		reason += "; the remote said: " + strings.Join(said, " / ")
	}
	if len(reason) > 800 {
		reason = reason[:800] + "..."
	}
	return reason
}

// catFile is one long-running `git cat-file --batch`: the store reads every
// object through it, so a read costs no process. Objects that appear later
// (written by the store, or fetched) are found: git looks again on a miss.
type catFile struct {
	s   *Store
	mu  sync.Mutex
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// object is one answer of cat-file; ok is false when the repository lacks
// the object.
type object struct {
	kind string
	data []byte
	ok   bool
}

// get returns the object id names; ok is false when the repository lacks it.
func (c *catFile) get(id string) (kind string, data []byte, ok bool, err error) {
	objs, err := c.getMany([]string{id})
	if err != nil {
		return "", nil, false, err
	}
	return objs[0].kind, objs[0].data, objs[0].ok, nil
}

// getMany returns the objects ids name, in order. The requests are written
// while the answers are read, so a thousand objects cost one round trip,
// not a thousand: listing an environment reads every scope this way.
func (c *catFile) getMany(ids []string) ([]object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for attempt := 0; ; attempt++ {
		objs, err := c.getManyLocked(ids)
		if err == nil || attempt == 1 {
			return objs, err
		}
		c.stopLocked() // a broken pipe: start a fresh process once
	}
}

func (c *catFile) getManyLocked(ids []string) ([]object, error) {
	if c.cmd == nil {
		if err := c.startLocked(); err != nil {
			return nil, err
		}
	}
	for _, id := range ids {
		if strings.ContainsAny(id, "\n\r") {
			return nil, errcode.New(errcode.Internal, "object name %q has a line break", id)
		}
	}
	written := make(chan error, 1)
	go func(in io.Writer) {
		w := bufio.NewWriterSize(in, 64<<10)
		for _, id := range ids {
			if _, err := w.WriteString(id + "\n"); err != nil {
				written <- err
				return
			}
		}
		written <- w.Flush()
	}(c.in)
	out := make([]object, len(ids))
	for i := range ids {
		o, err := c.readOne()
		if err != nil {
			c.stopLocked() // unblocks the writer
			// Wait for the writer; its error is a consequence of the stop
			// (a closed pipe) and says less than the read error.
			_ = <-written //nolint:staticcheck // S1005 is wrong here: the blank assignment drops the writer's error on purpose, and errcheck flags a bare receive
			return nil, err
		}
		out[i] = o
	}
	if err := <-written; err != nil {
		return nil, errcode.Wrap(errcode.StoreUnavailable, err, "git cat-file")
	}
	return out, nil
}

func (c *catFile) readOne() (object, error) {
	line, err := c.out.ReadString('\n')
	if err != nil {
		return object{}, errcode.Wrap(errcode.StoreUnavailable, err, "git cat-file")
	}
	fields := strings.Fields(line)
	if len(fields) == 2 && fields[1] == "missing" {
		return object{}, nil
	}
	if len(fields) != 3 {
		return object{}, errcode.New(errcode.StoreUnavailable, "git cat-file answered %q", strings.TrimSpace(line))
	}
	size, err := strconv.Atoi(fields[2])
	if err != nil {
		return object{}, errcode.New(errcode.StoreUnavailable, "git cat-file answered %q", strings.TrimSpace(line))
	}
	data := make([]byte, size+1)
	if _, err := io.ReadFull(c.out, data); err != nil {
		return object{}, errcode.Wrap(errcode.StoreUnavailable, err, "git cat-file")
	}
	return object{kind: fields[1], data: data[:size], ok: true}, nil
}

func (c *catFile) startLocked() error {
	c.s.countSpawn("cat-file")
	// Long-running and fed through pipes: the one git command built with
	// gitcli.Cmd.Command rather than run with gitcli.Cmd.Run.
	cmd := gitcli.Cmd{GitDir: c.s.dir, Env: c.s.env, Args: []string{"cat-file", "--batch"}}.Command(context.Background())
	in, err := cmd.StdinPipe()
	if err != nil {
		return errcode.Wrap(errcode.StoreUnavailable, err, "start git cat-file")
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return errcode.Wrap(errcode.StoreUnavailable, err, "start git cat-file")
	}
	if err := cmd.Start(); err != nil {
		return errcode.Wrap(errcode.StoreUnavailable, err, "start git cat-file").WithHint("Install git (2.29 or newer) on PATH.")
	}
	c.cmd, c.in, c.out = cmd, in, bufio.NewReaderSize(out, 64<<10)
	return nil
}

func (c *catFile) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopLocked()
}

func (c *catFile) stopLocked() {
	if c.cmd == nil {
		return
	}
	c.in.Close() // cat-file exits at the end of its input
	done := make(chan struct{})
	// Wait only reaps the process: its exit status after we closed its
	// input, or killed it, says nothing a caller could use.
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		// Kill fails only when the process has exited meanwhile, and then
		// done closes anyway.
		_ = c.cmd.Process.Kill()
		<-done
	}
	c.cmd, c.in, c.out = nil, nil, nil
}
