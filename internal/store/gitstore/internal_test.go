package gitstore

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

func TestRefSegment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, want string
	}{
		{"pr-1", "pr-1"},
		{"main", "main"},
		{"branch-release-1.2_rc", "branch-release-1.2_rc"},
		{"A..b", "=" + hex.EncodeToString([]byte("A..b"))},
		{"x.lock", "=" + hex.EncodeToString([]byte("x.lock"))},
		{"trailing.", "=" + hex.EncodeToString([]byte("trailing."))},
		{strings.Repeat("a", 128), strings.Repeat("a", 128)},
	}
	for _, tc := range tests {
		if got := refSegment(tc.name); got != tc.want {
			t.Errorf("refSegment(%q) = %q, want %q", tc.name, got, tc.want)
		}
		if err := checkName("scope", tc.name); err != nil {
			t.Errorf("checkName(%q): %v", tc.name, err)
		}
		back, ok := nameOf(refSegment(tc.name))
		if !ok || back != tc.name {
			t.Errorf("nameOf(refSegment(%q)) = %q, %v", tc.name, back, ok)
		}
		ref := branchOf(store.Key{Stack: "acme/app", Environment: tc.name, Scope: "main"})
		if out, err := exec.Command("git", "check-ref-format", ref).CombinedOutput(); err != nil {
			t.Errorf("git check-ref-format %s: %v %s", ref, err, out)
		}
	}
	// Segments refSegment cannot have written decode to nothing, so a branch
	// a human adds is never read as a scope.
	for _, seg := range []string{"=zz", "=" + hex.EncodeToString([]byte("pr-1")), "=" + hex.EncodeToString([]byte("a/b")), "a b", ""} {
		if name, ok := nameOf(seg); ok {
			t.Errorf("nameOf(%q) = %q, want no name", seg, name)
		}
	}
	// Names are refused before they could reach another ref.
	for _, bad := range []string{"", ".", "..", "a/b", "../x", ".x", "a b", "a\x00b", "x~1", "x^", "x:y", "@{1}", strings.Repeat("a", 129), strings.Repeat("a.", 63) + ".."} {
		if err := checkName("scope", bad); !errcode.Is(err, errcode.Usage) {
			t.Errorf("checkName(%q) = %v, want USAGE", bad, err)
		}
	}
}

func TestTreeEncodingMatchesGit(t *testing.T) {
	t.Parallel()
	s := openInternal(t, newBareRepo(t))
	blob, err := s.putObject("blob", []byte("hello\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := gitOut(t, s.dir, []byte("hello\n"), "hash-object", "--stdin"); blob != want {
		t.Fatalf("blob id %s, git says %s", blob, want)
	}
	sub, err := s.putObject("tree", mustTree(t, map[string]entry{"run-a.json": {modeBlob, blob}}))
	if err != nil {
		t.Fatal(err)
	}
	// "receipts" sorts after "receipts.json" only when compared as
	// "receipts/": git's order, which mktree also produces.
	entries := map[string]entry{"receipts": {modeTree, sub}, "receipts.json": {modeBlob, blob}, "README.md": {modeBlob, blob}, "a-b": {modeBlob, blob}}
	root, err := s.putObject("tree", mustTree(t, entries))
	if err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	for n, e := range entries {
		kind := "blob"
		if e.mode == modeTree {
			kind = "tree"
		}
		in.WriteString(e.mode + " " + kind + " " + e.id + "\t" + n + "\n")
	}
	if want := gitOut(t, s.dir, []byte(in.String()), "mktree"); root != want {
		t.Fatalf("tree id %s, git mktree says %s", root, want)
	}
	if out := gitOut(t, s.dir, nil, "fsck", "--strict", "--no-dangling"); strings.Contains(out, "error") {
		t.Fatalf("fsck: %s", out)
	}
	_, data, ok, err := s.cat.get(root)
	if err != nil || !ok {
		t.Fatalf("cat-file of our own tree: %v %v", ok, err)
	}
	got, err := parseTree(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(entries, got, cmp.AllowUnexported(entry{})); diff != "" {
		t.Errorf("parseTree (-want +got):\n%s", diff)
	}
}

func mustTree(t *testing.T, entries map[string]entry) []byte {
	t.Helper()
	b, err := encodeTree(entries)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSeal(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{1}, KeySize)
	other := bytes.Repeat([]byte{2}, KeySize)
	plain := []byte(`{"password":"s3cret"}`)
	a, err := seal(key, "preview/pr-1/state", plain)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := seal(key, "preview/pr-1/state", plain)
	if bytes.Equal(a, b) {
		t.Error("two seals of one state are equal: the nonce is not fresh")
	}
	if bytes.Contains(a, []byte("s3cret")) || !bytes.HasPrefix(a, []byte(sealedMagic+keyID(key)+"\n")) {
		t.Errorf("sealed document: %q", a)
	}
	if got, err := unseal(key, "preview/pr-1/state", "state", a); err != nil || !bytes.Equal(got, plain) {
		t.Errorf("unseal = %q, %v", got, err)
	}
	if _, err := unseal(nil, "preview/pr-1/state", "state", a); !errcode.Is(err, errcode.Usage) || !strings.Contains(err.Error(), EnvStateKey) {
		t.Errorf("unseal without key: %v, want USAGE naming %s", err, EnvStateKey)
	}
	if _, err := unseal(other, "preview/pr-1/state", "state", a); !errcode.Is(err, errcode.Usage) || !strings.Contains(err.Error(), keyID(key)) {
		t.Errorf("unseal with another key: %v, want USAGE naming the key id", err)
	}
	// A sealed state copied into another scope's branch does not open.
	if _, err := unseal(key, "preview/pr-2/state", "state", a); !errcode.Is(err, errcode.ReceiptCorrupt) {
		t.Errorf("unseal in another scope: %v, want RECEIPT_CORRUPT", err)
	}
	tampered := append([]byte(nil), a...)
	tampered[len(tampered)-1] ^= 1
	if _, err := unseal(key, "preview/pr-1/state", "state", tampered); !errcode.Is(err, errcode.ReceiptCorrupt) {
		t.Errorf("unseal of a tampered state: %v, want RECEIPT_CORRUPT", err)
	}
}

func TestFromEnv(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{0xab}, KeySize)
	for _, raw := range []string{hex.EncodeToString(key), base64.StdEncoding.EncodeToString(key), base64.RawURLEncoding.EncodeToString(key), " " + hex.EncodeToString(key) + "\n"} {
		got, err := ParseKey(raw)
		if err != nil || !bytes.Equal(got, key) {
			t.Errorf("ParseKey(%q) = %x, %v", raw, got, err)
		}
	}
	for _, raw := range []string{"short", hex.EncodeToString(key[:16]), strings.Repeat("z", 64)} {
		if _, err := ParseKey(raw); !errcode.Is(err, errcode.Usage) || strings.Contains(err.Error(), raw) {
			t.Errorf("ParseKey(%q) = %v, want USAGE that does not repeat the value", raw, err)
		}
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	apply := func(opts []Option) *Store {
		s := &Store{}
		for _, o := range opts {
			o(s)
		}
		return s
	}
	opts, err := FromEnv(env(map[string]string{EnvStateKey: hex.EncodeToString(key), EnvBudget: "90"}))
	if err != nil {
		t.Fatal(err)
	}
	if s := apply(opts); !bytes.Equal(s.key, key) || s.budget.Seconds() != 90 || s.plain {
		t.Errorf("FromEnv gave key %x budget %s plain %v", s.key, s.budget, s.plain)
	}
	opts, err = FromEnv(env(map[string]string{EnvStatePlaintext: "1", EnvBudget: "2m"}))
	if err != nil {
		t.Fatal(err)
	}
	if s := apply(opts); s.key != nil || !s.plain || s.budget.Minutes() != 2 {
		t.Errorf("FromEnv gave key %x budget %s plain %v", s.key, s.budget, s.plain)
	}
	for _, bad := range []map[string]string{{EnvStateKey: "nope"}, {EnvStatePlaintext: "maybe"}, {EnvBudget: "soon"}, {EnvBudget: "-5"}} {
		if _, err := FromEnv(env(bad)); !errcode.Is(err, errcode.Usage) {
			t.Errorf("FromEnv(%v) = %v, want USAGE", bad, err)
		}
	}
}

func TestRedactAndScrub(t *testing.T) {
	t.Parallel()
	tests := []struct{ remote, shown string }{
		{"https://x-access-token:ghs_S3cretToken@github.com/o/r.git", "https://x-access-token@github.com/o/r.git"},
		{"https://ghp_TokenAsUser@github.com/o/r.git", "https://***@github.com/o/r.git"},
		{"ssh://git@github.com/o/r.git", "ssh://git@github.com/o/r.git"},
		{"git@github.com:o/r.git", "git@github.com:o/r.git"},
		{"/srv/git/r.git", "/srv/git/r.git"},
		{"file:///srv/git/r.git", "file:///srv/git/r.git"},
	}
	for _, tc := range tests {
		if got := Redact(tc.remote); got != tc.shown {
			t.Errorf("Redact(%q) = %q, want %q", tc.remote, got, tc.shown)
		}
	}
	scrub := newScrubber("https://bot:p%40ss%2Fw0rd@example.com/r.git")
	text := "fatal: unable to access 'https://bot:p%40ss%2Fw0rd@example.com/r.git/': p@ss/w0rd\nAuthorization: Basic dXNlcjpwYXNz\nhttps://u:other@h/x"
	got := scrub(text)
	for _, secret := range []string{"p@ss/w0rd", "p%40ss%2Fw0rd", "dXNlcjpwYXNz", "other"} {
		if strings.Contains(got, secret) {
			t.Errorf("scrubbed text still holds %q:\n%s", secret, got)
		}
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		stderr string
		want   failure
	}{
		{"fatal: unable to access 'https://h/r.git/': The requested URL returned error: 403", failPermission},
		{"remote: Permission to o/r.git denied to github-actions[bot].", failPermission},
		{"fatal: Authentication failed for 'https://h/r.git/'", failPermission},
		{"fatal: could not read Username for 'https://h': terminal prompts disabled", failPermission},
		{"git@github.com: Permission denied (publickey).", failPermission},
		{"remote: error: insufficient permission for adding an object to repository database ./objects", failPermission},
		{"remote: Repository not found.\nfatal: repository 'https://github.com/o/r.git/' not found", failPermission},
		{"fatal: couldn't find remote ref refs/heads/sponson-receipts/preview/pr-1", failGone},
		{"fatal: unable to access 'https://h/': Could not resolve host: h", failTransient},
		{"fatal: unable to access 'https://h/': Failed to connect to h port 443 after 1 ms: Couldn't connect to server", failTransient},
		{"error: RPC failed; HTTP 502 curl 22 The requested URL returned error: 502", failTransient},
		{"fatal: '/nope.git' does not appear to be a git repository", failOther},
	}
	for _, tc := range tests {
		if got := classify(tc.stderr); got != tc.want {
			t.Errorf("classify(%q) = %d, want %d", tc.stderr, got, tc.want)
		}
	}
}

// newBareRepo creates a bare repository to serve as a remote.
func newBareRepo(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "origin.git")
	gitOut(t, "", nil, "init", "--bare", "--quiet", dir)
	gitOut(t, dir, nil, "config", "receive.autogc", "false")
	return dir
}

func gitOut(t testing.TB, dir string, stdin []byte, args ...string) string {
	t.Helper()
	if dir != "" {
		args = append([]string{"--git-dir=" + dir}, args...)
	}
	cmd := exec.Command("git", args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func openInternal(t testing.TB, remote string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(context.Background(), remote, append([]Option{WithStateKey(bytes.Repeat([]byte{3}, KeySize))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var testScope = store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-1"}
