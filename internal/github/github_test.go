package github_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/github"
)

const token = "ghs_secretTOKENvalue123"

// fakeGitHub answers like GitHub's pulls endpoint: open pull requests in
// pages, a Link header to the next page (GitHub links to
// /repositories/{id}/pulls, not to the path that was asked), and GitHub's
// error documents for a wrong token or repository.
type fakeGitHub struct {
	t      *testing.T
	prefix string // "" for api.github.com, "/api/v3" for GitHub Enterprise Server
	pages  [][]int
	mu     sync.Mutex
	asked  []string
}

func (g *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	g.asked = append(g.asked, r.URL.RequestURI())
	g.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if r.Header.Get("Authorization") != "Bearer "+token {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest","status":"401"}`)
		return
	}
	for k, want := range map[string]string{"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"} {
		if got := r.Header.Get(k); got != want {
			g.t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if q := r.URL.Query(); q.Get("state") != "open" || q.Get("per_page") != "100" {
		g.t.Errorf("query %q, want state=open&per_page=100", r.URL.RawQuery)
	}
	page := 1
	switch r.URL.Path {
	case g.prefix + "/repos/sponson/demo/pulls":
	case g.prefix + "/repositories/4242/pulls":
		if _, err := fmt.Sscan(r.URL.Query().Get("page"), &page); err != nil {
			g.t.Errorf("page %q: %v", r.URL.Query().Get("page"), err)
		}
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"message":"Not Found","documentation_url":"https://docs.github.com/rest/pulls/pulls#list-pull-requests","status":"404"}`)
		return
	}
	if page < 1 || page > len(g.pages) {
		fmt.Fprint(w, "[]")
		return
	}
	if page < len(g.pages) {
		base := "http://" + r.Host + g.prefix + "/repositories/4242/pulls?state=open&per_page=100&page="
		w.Header().Set("Link", fmt.Sprintf(`<%s%d>; rel="next", <%s%d>; rel="last"`, base, page+1, base, len(g.pages)))
	}
	var pulls []map[string]any
	for _, n := range g.pages[page-1] {
		pulls = append(pulls, map[string]any{
			"url": fmt.Sprintf("https://api.github.com/repos/sponson/demo/pulls/%d", n), "number": n, "state": "open",
			"title": fmt.Sprintf("change %d", n), "head": map[string]any{"ref": fmt.Sprintf("feat/%d", n)},
		})
	}
	// A failed write means the client went away; the client's side of the
	// test reports that.
	_ = json.NewEncoder(w).Encode(pulls)
}

func serve(t *testing.T, g *fakeGitHub) *httptest.Server {
	g.t = t
	srv := httptest.NewServer(g) // listens on 127.0.0.1
	t.Cleanup(srv.Close)
	return srv
}

func TestOpenPullRequestsFollowsPages(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"", "/api/v3"} {
		t.Run("prefix "+prefix, func(t *testing.T) {
			t.Parallel()
			g := &fakeGitHub{prefix: prefix, pages: [][]int{{15, 12, 9}, {7, 3}}}
			srv := serve(t, g)
			c := &github.Client{BaseURL: srv.URL + prefix + "/", Token: token}
			got, err := c.OpenPullRequests(context.Background(), "sponson/demo")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]int{15, 12, 9, 7, 3}, got); diff != "" {
				t.Errorf("open pull requests (-want +got):\n%s", diff)
			}
			want := []string{
				prefix + "/repos/sponson/demo/pulls?per_page=100&state=open",
				prefix + "/repositories/4242/pulls?state=open&per_page=100&page=2",
			}
			if diff := cmp.Diff(want, g.asked); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOpenPullRequestsNoneOpen(t *testing.T) {
	t.Parallel()
	srv := serve(t, &fakeGitHub{})
	got, err := (&github.Client{BaseURL: srv.URL, Token: token}).OpenPullRequests(context.Background(), "sponson/demo")
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("got %v, %v; want an empty list", got, err)
	}
}

func TestErrorsNameTheStatusNeverTheToken(t *testing.T) {
	t.Parallel()
	srv := serve(t, &fakeGitHub{pages: [][]int{{1}}})
	for _, tc := range []struct {
		name, token, repo string
		want              []string
	}{
		{"wrong token", "ghp_wrongSECRETtoken", "sponson/demo", []string{"401 Unauthorized", "Bad credentials", "check GITHUB_TOKEN"}},
		{"unknown repository", token, "sponson/nope", []string{"GET /repos/sponson/nope/pulls", "404 Not Found", "Not Found"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := (&github.Client{BaseURL: srv.URL, Token: tc.token}).OpenPullRequests(context.Background(), tc.repo)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), tc.token) || strings.Contains(err.Error(), "SECRET") {
				t.Errorf("error %q contains the token", err)
			}
		})
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", "1750000000")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"message":"API rate limit exceeded for installation ID 1."}`)
	}))
	defer srv.Close()
	_, err := (&github.Client{BaseURL: srv.URL, Token: token}).OpenPullRequests(context.Background(), "sponson/demo")
	if err == nil || !strings.Contains(err.Error(), "403 Forbidden: API rate limit exceeded") || !strings.Contains(err.Error(), "rate limit exhausted until 2025-06-15T15:06:40Z") {
		t.Errorf("error %v", err)
	}
}

// TestNextPageElsewhereIsRefused: the token goes with every request, so a
// Link to another host is not followed.
func TestNextPageElsewhereIsRefused(t *testing.T) {
	t.Parallel()
	var leaked sync.Mutex
	hit := false
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Lock()
		hit = true
		leaked.Unlock()
		fmt.Fprint(w, "[]")
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Same IP, another port: another origin.
		w.Header().Set("Link", `<`+other.URL+`/repositories/1/pulls?page=2>; rel="next"`)
		fmt.Fprint(w, `[{"number": 1, "state": "open"}]`)
	}))
	defer srv.Close()
	_, err := (&github.Client{BaseURL: srv.URL, Token: token}).OpenPullRequests(context.Background(), "sponson/demo")
	if err == nil || !strings.Contains(err.Error(), "not following it with the token") {
		t.Errorf("error %v", err)
	}
	leaked.Lock()
	defer leaked.Unlock()
	if hit {
		t.Error("the client followed the link to another host")
	}
}

func TestEndlessPagesStop(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", `</again?state=open&per_page=100>; rel="next"`)
		fmt.Fprint(w, `[{"number": 1, "state": "open"}]`)
	}))
	defer srv.Close()
	_, err := (&github.Client{BaseURL: srv.URL, Token: token, MaxPages: 3}).OpenPullRequests(context.Background(), "sponson/demo")
	if err == nil || !strings.Contains(err.Error(), "more than 3 pages") {
		t.Errorf("error %v", err)
	}
}

func TestNotAList(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<html>captive portal</html>`)
	}))
	defer srv.Close()
	_, err := (&github.Client{BaseURL: srv.URL, Token: token}).OpenPullRequests(context.Background(), "sponson/demo")
	if err == nil || !strings.Contains(err.Error(), "not a list of pull requests") {
		t.Errorf("error %v", err)
	}
}

func TestBadInputs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ base, repo, want string }{
		{"", "sponson", "is not OWNER/NAME"},
		{"", "sponson/demo/x", "is not OWNER/NAME"},
		{"", "../demo", "is not OWNER/NAME"},
		{"", "sponson/", "is not OWNER/NAME"},
		{"ftp://example.com", "sponson/demo", "is not an http(s) URL"},
		{"https://user:pw@example.com", "sponson/demo", "must not hold credentials"},
	} {
		_, err := (&github.Client{BaseURL: tc.base, Token: token}).OpenPullRequests(context.Background(), tc.repo)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("base %q repo %q: error %v, want %q", tc.base, tc.repo, err, tc.want)
		}
	}
	if o, n, err := github.ParseRepo(" sponson/terraform-provider-sponson "); err != nil || o != "sponson" || n != "terraform-provider-sponson" {
		t.Errorf("ParseRepo: %q %q %v", o, n, err)
	}
}
