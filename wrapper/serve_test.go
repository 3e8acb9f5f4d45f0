package wrapper

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// lineWriter is a writer the test reads while the command writes: it
// hands the first address serve prints to a channel.
type lineWriter struct {
	mu   sync.Mutex
	buf  strings.Builder
	addr chan string
	sent bool
}

var servingAt = regexp.MustCompile(`on (http://[^ ]+/) `)

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if m := servingAt.FindStringSubmatch(w.buf.String()); m != nil && !w.sent {
		w.sent = true
		w.addr <- m[1]
	}
	return len(p), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// startServe runs `sponson serve` with args in dir on a loopback port of
// its own and returns its address; it stops when the test ends.
func startServe(t *testing.T, dir string, env map[string]string, args ...string) string {
	t.Helper()
	f, _, _ := testFactory(env)
	lw := &lineWriter{addr: make(chan string, 1)}
	f.Out, f.ErrOut = lw, lw
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan errcode.ExitCode, 1)
	go func() {
		done <- Run(ctx, append([]string{"serve", "--chdir", dir, "--addr", "127.0.0.1:0"}, args...), f)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != errcode.ExitOK {
			t.Errorf("serve ended with exit %d:\n%s", code, lw)
		}
	})
	select {
	case a := <-lw.addr:
		return a
	case code := <-done:
		done <- code
		t.Fatalf("serve ended with exit %d before serving:\n%s", code, lw)
	}
	return ""
}

func get(t *testing.T, method, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func servedScopes(t *testing.T, body string) []string {
	t.Helper()
	var m struct {
		Scopes []struct{ Scope string } `json:"scopes"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	var out []string
	for _, s := range m.Scopes {
		out = append(out, s.Scope)
	}
	return out
}

// Serve answers GET and HEAD alone, and its page and model follow the
// store: a scope written after it started is on the next answer.
func TestServeReadOnlyAndLive(t *testing.T) {
	t.Parallel()
	dir := statusFixture(t)
	base := startServe(t, dir, nil)
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		if code, _ := get(t, m, base, ""); code != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d, want 405", m, code)
		}
	}
	code, page := get(t, http.MethodGet, base, "")
	if code != http.StatusOK || !strings.Contains(page, `data-scope="pr-12"`) || !strings.Contains(page, "overview.json") {
		t.Fatalf("GET /: %d\n%s", code, page)
	}
	if code, body := get(t, http.MethodHead, base, ""); code != http.StatusOK || body != "" {
		t.Errorf("HEAD /: %d, %d bytes", code, len(body))
	}
	if code, _ := get(t, http.MethodGet, base+"nothing", ""); code != http.StatusNotFound {
		t.Errorf("GET /nothing: %d, want 404", code)
	}
	code, body := get(t, http.MethodGet, base+"overview.json", "")
	if code != http.StatusOK || strings.Contains(strings.Join(servedScopes(t, body), " "), "pr-77") {
		t.Fatalf("GET /overview.json: %d\n%s", code, body)
	}

	// A run writes a scope's receipt: the next answers have it.
	seed(t, dir, time.Now(), seedScope{name: "pr-77", status: receipt.StatusApplied, age: time.Minute, pr: 77, owns: 1})
	_, body = get(t, http.MethodGet, base+"overview.json", "")
	if !strings.Contains(strings.Join(servedScopes(t, body), " "), "pr-77") {
		t.Errorf("the model after the write lacks pr-77:\n%s", body)
	}
	if _, page = get(t, http.MethodGet, base, ""); !strings.Contains(page, `data-scope="pr-77"`) {
		t.Error("the page after the write lacks pr-77")
	}
}

func TestServeToken(t *testing.T) {
	t.Parallel()
	dir := statusFixture(t)

	// Beyond loopback without a token: refused before listening.
	for _, addr := range []string{":0", "0.0.0.0:0", "[::]:0"} {
		f, out, errOut := testFactory(nil)
		code := Run(context.Background(), []string{"serve", "--chdir", dir, "--addr", addr}, f)
		if code != errcode.ExitRefused || !strings.Contains(errOut.String(), "--token") {
			t.Errorf("serve --addr %s without a token: exit %d, want 2 naming --token\n%s%s", addr, code, out, errOut)
		}
	}

	// With one (here on loopback), every request must carry it.
	const token = "s3cret-token"
	base := startServe(t, dir, map[string]string{"SPONSON_SERVE_TOKEN": token})
	for _, c := range []struct {
		url, token string
		want       int
	}{
		{base, "", http.StatusUnauthorized},
		{base, "wrong", http.StatusUnauthorized},
		{base + "?token=wrong", "", http.StatusUnauthorized},
		{base + "overview.json", "", http.StatusUnauthorized},
		{base, token, http.StatusOK},
		{base + "overview.json", token, http.StatusOK},
		{base + "?token=" + token, "", http.StatusOK},
	} {
		if code, _ := get(t, http.MethodGet, c.url, c.token); code != c.want {
			t.Errorf("GET %s (bearer %q): %d, want %d", c.url, c.token, code, c.want)
		}
	}
	// The page opened with the token polls with it.
	if _, page := get(t, http.MethodGet, base+"?token="+token, ""); !strings.Contains(page, `overview.json?token=`+token) {
		t.Error("the page opened with ?token does not poll with it")
	}
	if code, _ := get(t, http.MethodPost, base+"?token="+token, ""); code != http.StatusMethodNotAllowed {
		t.Errorf("POST with the token: %d, want 405", code)
	}
}
