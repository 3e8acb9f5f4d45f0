package hostapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/hostapi"
)

const token = "tok_SECRETvalue42"

// echo answers every request with what it received: the method, the escaped
// path, the headers Do sets and the JSON body, and a Next-Page header.
func echo(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("reading the request: %v", err)
		}
		w.Header().Set("Next-Page", "2")
		_ = json.NewEncoder(w).Encode(map[string]string{
			"method": r.Method, "path": r.URL.EscapedPath(), "body": string(body),
			"accept": r.Header.Get("Accept"), "token": r.Header.Get("Private-Token"),
			"agent": r.Header.Get("User-Agent"), "type": r.Header.Get("Content-Type"),
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func api(hint func(*http.Response) string) *hostapi.API {
	return &hostapi.API{Name: "Test API", Header: http.Header{"Accept": {"application/test"}, "Private-Token": {token}}, Hint: hint}
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestDoSendsHeadersAndBodyAndDecodes(t *testing.T) {
	t.Parallel()
	srv := echo(t)
	u := mustURL(t, srv.URL)
	u.RawPath = "/projects/group%2Fapp/notes"
	u.Path = "/projects/group/app/notes"
	for _, tc := range []struct {
		method string
		body   any
		want   map[string]string
	}{
		{http.MethodGet, nil, map[string]string{"method": "GET", "path": "/projects/group%2Fapp/notes", "body": "", "accept": "application/test", "token": token, "agent": "sponson", "type": ""}},
		{http.MethodPost, map[string]string{"body": "hello"}, map[string]string{"method": "POST", "path": "/projects/group%2Fapp/notes", "body": `{"body":"hello"}`, "accept": "application/test", "token": token, "agent": "sponson", "type": "application/json"}},
	} {
		var got map[string]string
		h, err := api(nil).Do(context.Background(), tc.method, u, tc.body, &got, "an echo")
		if err != nil {
			t.Fatalf("%s: %v", tc.method, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: what the server received (-want +got):\n%s", tc.method, diff)
		}
		if h.Get("Next-Page") != "2" {
			t.Errorf("%s: answer headers %v", tc.method, h)
		}
	}
}

// TestStatusErrors: an answer outside 2xx names the method, the escaped
// path, the status, the host's message (a string, an object, or "error") cut
// short, and the client's hint; never the token.
func TestStatusErrors(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 300)
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"message", 401, `{"message":"Bad credentials"}`, "Test API GET /p%2Fq: 401 Unauthorized: Bad credentials (hint for 401)"},
		{"message object", 400, `{"message":{"note":["is too long"]}}`, "Test API GET /p%2Fq: 400 Bad Request: map[note:[is too long]] (hint for 400)"},
		{"error", 403, `{"error":"insufficient_scope"}`, "Test API GET /p%2Fq: 403 Forbidden: insufficient_scope (hint for 403)"},
		{"not JSON, no hint", 502, `<html>bad gateway</html>`, "Test API GET /p%2Fq: 502 Bad Gateway"},
		{"long message", 422, `{"message":"` + long + `"}`, "Test API GET /p%2Fq: 422 Unprocessable Entity: " + long[:200] + "… (hint for 422)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			}))
			defer srv.Close()
			u := mustURL(t, srv.URL+"/p%2Fq")
			hint := func(resp *http.Response) string {
				if resp.StatusCode == 502 {
					return ""
				}
				return fmt.Sprintf("hint for %d", resp.StatusCode)
			}
			_, err := api(hint).Do(context.Background(), http.MethodGet, u, nil, nil, "anything")
			var se *hostapi.StatusError
			if !errors.As(err, &se) || se.Status != tc.status {
				t.Fatalf("error %v, want a StatusError %d", err, tc.status)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n%q, want\n%q", err, tc.want)
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("error %q holds the token", err)
			}
		})
	}
}

func TestNotWhatWasAsked(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<html>captive portal</html>`)
	}))
	defer srv.Close()
	var v []int
	_, err := api(nil).Do(context.Background(), http.MethodGet, mustURL(t, srv.URL+"/list"), nil, &v, "a list of numbers")
	if err == nil || !strings.HasPrefix(err.Error(), "Test API GET /list: the answer is not a list of numbers: ") {
		t.Errorf("error %v", err)
	}
}

// TestUnreachable: a server that is not there is an error naming the API and
// the URL, which never holds the token.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	u := mustURL(t, srv.URL+"/gone")
	srv.Close()
	_, err := api(nil).Do(context.Background(), http.MethodGet, u, nil, nil, "anything")
	if err == nil || !strings.HasPrefix(err.Error(), "Test API: ") || !strings.Contains(err.Error(), "/gone") || strings.Contains(err.Error(), token) {
		t.Errorf("error %v", err)
	}
}

func TestParseBase(t *testing.T) {
	t.Parallel()
	a := api(nil)
	for raw, want := range map[string]string{
		"":                              "https://api.example/v4",
		" https://ghe.example/api/v3/ ": "https://ghe.example/api/v3",
		"http://127.0.0.1:8080":         "http://127.0.0.1:8080/",
	} {
		u, err := a.ParseBase(raw, "https://api.example/v4", "; set THE_TOKEN")
		if err != nil || u.String() != want {
			t.Errorf("ParseBase(%q) = %v, %v; want %s", raw, u, err, want)
		}
	}
	for raw, want := range map[string]string{
		"ftp://example.com":           `Test API URL "ftp://example.com" is not an http(s) URL`,
		"https://":                    `Test API URL "https://" is not an http(s) URL`,
		"https://user:pw@example.com": "Test API URL must not hold credentials; set THE_TOKEN",
	} {
		if _, err := a.ParseBase(raw, "https://api.example/v4", "; set THE_TOKEN"); err == nil || err.Error() != want {
			t.Errorf("ParseBase(%q): error %v, want %q", raw, err, want)
		}
	}
}
