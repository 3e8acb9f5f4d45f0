package gitstore_test

// Tests of `--store git` and `--store git+URL` as storeurl opens them. They
// live here, beside the store they open; they set SPONSON_STATE_KEY in the
// process environment, so they do not run in parallel.

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/gitstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
)

// checkout makes a clone-like working repository whose origin is remote and
// returns a configuration directory inside it.
func checkout(t *testing.T, remote string) (top, configDir string) {
	t.Helper()
	top = filepath.Join(t.TempDir(), "work")
	git(t, "", "init", "--quiet", top)
	if remote != "" {
		git(t, top, "remote", "add", "origin", remote)
	}
	configDir = filepath.Join(top, "infra")
	if err := os.Mkdir(configDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return top, configDir
}

func openURL(t *testing.T, raw, dir string) (store.Store, string) {
	t.Helper()
	st, shown, err := storeurl.Open(raw, dir)
	if err != nil {
		t.Fatalf("storeurl.Open(%q): %v", raw, err)
	}
	t.Cleanup(func() { st.Close() })
	return st, shown
}

func TestStoreURLGitOrigin(t *testing.T) {
	t.Setenv(gitstore.EnvStateKey, hex.EncodeToString(testKey))
	remote := newRemote(t)
	_, dir := checkout(t, remote)
	st, shown := openURL(t, "git", dir)
	if shown != "git+"+remote {
		t.Errorf("shown as %q, want git+%s", shown, remote)
	}
	ctx := t.Context()
	g := mustAcquire(t, st, pr1, "run-a", time.Minute)
	if err := st.WriteState(ctx, g.Lease, []byte(`{"serial":1}`)); err != nil {
		t.Fatalf("WriteState with SPONSON_STATE_KEY set: %v", err)
	}
	// The same store through git+URL reads it back.
	other, _ := openURL(t, "git+file://"+remote, t.TempDir())
	if got, err := other.ReadState(ctx, pr1); err != nil || string(got) != `{"serial":1}` {
		t.Errorf("ReadState through git+file:// = %q, %v", got, err)
	}
	if ref := git(t, remote, "for-each-ref", "--format=%(refname)"); ref != "refs/heads/sponson-layout/2\nrefs/heads/sponson-stacks/preview/acme_2fapp/pr-1" {
		t.Errorf("remote refs: %q", ref)
	}

	// A relative origin is relative to the working tree, as for git.
	parent := filepath.Dir(remote)
	top, dir2 := checkout(t, "")
	rel, err := filepath.Rel(top, parent)
	if err != nil {
		t.Fatal(err)
	}
	git(t, top, "remote", "add", "origin", filepath.Join(rel, "origin.git"))
	st2, shown2 := openURL(t, "git", dir2)
	if info, err := st2.ReadLease(ctx, pr1); err != nil || info.Holder != "run-a" {
		t.Errorf("ReadLease through a relative origin (%s) = %+v, %v", shown2, info, err)
	}
}

func TestStoreURLGitErrors(t *testing.T) {
	t.Setenv(gitstore.EnvStateKey, "")
	_, noOrigin := checkout(t, "")
	for _, dir := range []string{noOrigin, t.TempDir()} {
		_, _, err := storeurl.Open("git", dir)
		e := wantCode(t, err, errcode.Usage)
		if !strings.Contains(e.Hint, "git+URL") {
			t.Errorf("hint %q does not offer git+URL", e.Hint)
		}
	}
	if _, _, err := storeurl.Open("git+", t.TempDir()); !errcode.Is(err, errcode.Usage) {
		t.Errorf("git+ without a URL: %v, want USAGE", err)
	}
	t.Setenv(gitstore.EnvStateKey, "not-a-key")
	if _, _, err := storeurl.Open("git+file://"+newRemote(t), t.TempDir()); !errcode.Is(err, errcode.Usage) || strings.Contains(err.Error(), "not-a-key") {
		t.Errorf("a malformed key: %v, want USAGE that does not repeat it", err)
	}
	t.Setenv(gitstore.EnvStateKey, "")
	st, shown := openURL(t, "git+https://bot:hunter2-secret@git.example.com/o/r.git", t.TempDir())
	_ = st
	if strings.Contains(shown, "hunter2") || shown != "git+https://bot@git.example.com/o/r.git" {
		t.Errorf("shown as %q", shown)
	}
	_, shown = openURL(t, "git+https://ghp_tokenAsUser0123456789@git.example.com/o/r.git", t.TempDir())
	if strings.Contains(shown, "ghp_") {
		t.Errorf("shown as %q: a token given as user name is a credential", shown)
	}
}

// TestStoreURLCheckoutCredentials: actions/checkout keeps the job's token in
// the checkout's http.<url>.extraheader; `--store git` pushes with it as
// `git push` from the checkout would, and never shows it.
func TestStoreURLCheckoutCredentials(t *testing.T) {
	t.Setenv(gitstore.EnvStateKey, hex.EncodeToString(testKey))
	const token = "ghs_checkoutToken0123456789"
	remote := newRemote(t)
	base := gitHTTP(t, filepath.Dir(remote), "x-access-token", token)
	top, dir := checkout(t, base+"/origin.git")
	header := "AUTHORIZATION: basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
	git(t, top, "config", "--local", "http."+base+"/.extraheader", header)

	st, shown := openURL(t, "git", dir)
	ctx := t.Context()
	g := mustAcquire(t, st, pr1, "run-a", time.Minute)
	if err := st.WriteReceipt(ctx, g.Lease, storetest.NewReceipt(pr1, "run-a", 1)); err != nil {
		t.Fatalf("WriteReceipt with the checkout's credentials: %v", err)
	}
	// The fallback directory of --store is .sponson/unpushed in the
	// configuration directory.
	hook(t, remote, "pre-receive", "exit 1\n")
	err := st.WriteReceipt(ctx, g.Lease, storetest.NewReceipt(pr1, "run-a", 2))
	e := wantCode(t, err, errcode.StoreRejected)
	if kept, _ := e.Details["keptAt"].(string); !strings.HasPrefix(kept, filepath.Join(dir, ".sponson", "unpushed")) {
		t.Errorf("kept at %q, want under %s/.sponson/unpushed", kept, dir)
	}
	for _, text := range []string{shown, describe(err)} {
		if strings.Contains(text, token) || strings.Contains(text, base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))) {
			t.Errorf("the checkout's token leaked: %s", text)
		}
	}
	// Without the checkout's settings the same URL is refused.
	plain, err := gitstore.Open(context.Background(), base+"/origin.git", gitstore.WithStateKey(testKey))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := plain.ReadLease(ctx, pr1); !errcode.Is(err, errcode.StorePermission) {
		t.Errorf("without the checkout's credentials: %v, want STORE_PERMISSION", err)
	}
}
