package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// TestE2EServeUpdatesAfterRun (issue 52, "serve ... updates after a run"):
// `sponson serve`, a process of its own on a loopback port, reads the store
// anew for every answer, so a scope that `sponson apply` (another process,
// a real engine and real providers) makes while it serves is on its
// /overview.json once the run has written its receipt, with that run as
// the scope's last, applied. Serve answers GET alone: a POST is refused
// 405 and changes nothing.
func TestE2EServeUpdatesAfterRun(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	c, _ := newRealChainWorld(t, h, "file")
	c.dir = h.workdir("testdata/cancelsleep")
	// A store with one scope (pr-25) before serve starts.
	if r := h.run(c.dir, c.env, append(append([]string{"apply"}, c.where...), "-var", "sleep=0s")...); r.exit != 0 {
		t.Fatalf("apply pr-25: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}

	serve := h.command(c.dir, c.env, "serve", "--addr", "127.0.0.1:0")
	var serveOut lockedBuffer
	serve.Stdout, serve.Stderr = &serveOut, &serveOut
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	servingAt := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+/) `)
	var base string
	waitFor(t, "serve to listen", func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("serve ended before serving: %v\n%s", err, serveOut.String())
		default:
		}
		if m := servingAt.FindStringSubmatch(serveOut.String()); m != nil {
			base = m[1]
			return true
		}
		return false
	})

	before := overviewScopes(t, base)
	if _, ok := before["pr-25"]; !ok {
		t.Fatalf("/overview.json lacks the scope applied before serve started: %v", before)
	}
	if _, ok := before["pr-26"]; ok {
		t.Fatalf("/overview.json has pr-26 before its run: %v", before)
	}

	// Read-only: a POST is refused, whatever it carries.
	resp, err := http.Post(base+"overview.json", "application/json", strings.NewReader(`{"scopes":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /overview.json: %d, Allow %q; want 405, GET, HEAD", resp.StatusCode, resp.Header.Get("Allow"))
	}

	// A run for a new scope, a process of its own, while serve serves.
	apply := h.command(c.dir, c.env, "apply", "--scope", "pr-26", "-var", "sleep=2s")
	var applyOut lockedBuffer
	apply.Stdout, apply.Stderr = &applyOut, &applyOut
	if err := apply.Start(); err != nil {
		t.Fatal(err)
	}
	applied := make(chan error, 1)
	go func() { applied <- apply.Wait() }()
	var ended bool
	// Poll until the scope's last run is applied. Once the apply has ended
	// its receipt is in the store: the next answer must show it.
	for {
		finished := ended
		if s, ok := overviewScopes(t, base)["pr-26"]; ok && s.LastRun != nil && s.LastRun.Status == receipt.StatusApplied {
			if s.LastRun.Command != "apply" || s.Owns == 0 {
				t.Errorf("pr-26's last run is %+v, owning %d, want the apply owning what it made", *s.LastRun, s.Owns)
			}
			break
		}
		if finished {
			t.Fatalf("the apply of pr-26 ended and /overview.json does not show it applied: %v\n%s", overviewScopes(t, base), applyOut.String())
		}
		select {
		case err := <-applied:
			if err != nil {
				t.Fatalf("apply pr-26: %v\n%s", err, applyOut.String())
			}
			ended = true
		case <-time.After(50 * time.Millisecond):
		}
	}
	if !ended {
		if err := <-applied; err != nil {
			t.Fatalf("apply pr-26: %v\n%s", err, applyOut.String())
		}
	}
	if _, ok := overviewScopes(t, base)["pr-25"]; !ok {
		t.Error("pr-25 is gone from /overview.json after pr-26's run")
	}

	// Serve stops on SIGINT, cleanly.
	if err := serve.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Errorf("serve after SIGINT: %v\n%s", err, serveOut.String())
	}
}

// servedScope is a scope of /overview.json, as much as the test reads.
type servedScope struct {
	Scope   string `json:"scope"`
	Owns    int    `json:"owns"`
	LastRun *struct {
		Command string `json:"command"`
		Status  string `json:"status"`
	} `json:"lastRun"`
}

// overviewScopes GETs base's /overview.json and returns its scopes by name.
func overviewScopes(t *testing.T, base string) map[string]servedScope {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, base+"overview.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /overview.json: %d %v\n%s", resp.StatusCode, err, b)
	}
	var m struct {
		Scopes []servedScope `json:"scopes"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("/overview.json: %v\n%s", err, b)
	}
	out := map[string]servedScope{}
	for _, s := range m.Scopes {
		out[s.Scope] = s
	}
	return out
}
