// Package github reads what Sponson needs from the GitHub REST API: the open
// pull requests of a repository, which `sponson gc` compares with the pr-<n>
// scopes of an environment. It is a small client on net/http: the token is
// sent only to the API's own host, and no error ever contains it.
package github

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultBaseURL is the API of github.com; GitHub Enterprise Server and
// GitHub Actions name theirs in GITHUB_API_URL.
const DefaultBaseURL = "https://api.github.com"

// APIVersion is the REST API version the client asks for.
const APIVersion = "2022-11-28"

// perPage is the largest page the pulls endpoint serves.
const perPage = 100

// DefaultMaxPages bounds the pages one listing reads (10,000 pull requests),
// so that a server that keeps answering with a next link cannot loop us.
const DefaultMaxPages = 100

// Client calls the GitHub REST API.
type Client struct {
	// BaseURL is the API root, DefaultBaseURL when empty.
	BaseURL string
	// Token is sent as a bearer token; empty sends none.
	Token string
	// HTTP is the client used; one with a 30 s timeout when nil.
	HTTP *http.Client
	// MaxPages bounds a listing; DefaultMaxPages when zero.
	MaxPages int
}

// ParseRepo checks an OWNER/NAME repository as GITHUB_REPOSITORY spells it.
func ParseRepo(s string) (owner, name string, err error) {
	owner, name, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok || !validPart(owner) || !validPart(name) {
		return "", "", fmt.Errorf("repository %q is not OWNER/NAME", s)
	}
	return owner, name, nil
}

func validPart(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !validChar(s[i]) {
			return false
		}
	}
	return true
}

// validChar reports whether c may appear in an owner or repository name.
func validChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}

// OpenPullRequests returns the numbers of the open pull requests of repo
// (OWNER/NAME), following the Link header's next pages.
func (c *Client) OpenPullRequests(ctx context.Context, repo string) ([]int, error) {
	owner, name, err := ParseRepo(repo)
	if err != nil {
		return nil, err
	}
	base, err := c.base()
	if err != nil {
		return nil, err
	}
	first := base.JoinPath("repos", owner, name, "pulls")
	first.RawQuery = url.Values{"state": {"open"}, "per_page": {fmt.Sprint(perPage)}}.Encode()

	maxPages := c.MaxPages
	if maxPages <= 0 {
		maxPages = DefaultMaxPages
	}
	out := []int{}
	next := first
	for page := 1; next != nil; page++ {
		if page > maxPages {
			return nil, fmt.Errorf("GitHub API: more than %d pages of open pull requests in %s; stopped", maxPages, repo)
		}
		var pulls []struct {
			Number int    `json:"number"`
			State  string `json:"state"`
		}
		link, err := c.get(ctx, next, &pulls)
		if err != nil {
			return nil, err
		}
		for _, p := range pulls {
			if p.Number > 0 && (p.State == "" || p.State == "open") {
				out = append(out, p.Number)
			}
		}
		if next, err = nextPage(base, link); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c *Client) base() (*url.URL, error) {
	raw := strings.TrimSpace(c.BaseURL)
	if raw == "" {
		raw = DefaultBaseURL
	}
	u, err := url.Parse(strings.TrimSuffix(raw, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("GitHub API URL %q is not an http(s) URL", raw)
	}
	if u.User != nil {
		return nil, errors.New("GitHub API URL must not hold credentials; set GITHUB_TOKEN")
	}
	if !strings.HasPrefix(u.Path, "/") {
		u.Path = "/" + u.Path
	}
	return u, nil
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 30 * time.Second}
}

// get fetches one page into v and returns its Link header.
func (c *Client) get(ctx context.Context, u *url.URL, v any) (string, error) {
	return c.do(ctx, http.MethodGet, u, nil, v, "a list of pull requests")
}

// do sends one request (body, when not nil, as JSON) and reads a 2xx answer
// into v, which is what (in words, for the error); it returns the answer's
// Link header.
func (c *Client) do(ctx context.Context, method string, u *url.URL, body, v any, what string) (string, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return "", fmt.Errorf("GitHub API %s %s: %w", method, u.Path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return "", fmt.Errorf("GitHub API %s %s: %w", method, u.Path, err)
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", APIVersion)
	req.Header.Set("User-Agent", "sponson")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		// A *url.Error names the URL, which never holds the token.
		return "", fmt.Errorf("GitHub API: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return "", fmt.Errorf("GitHub API %s %s: reading the answer: %w", method, u.Path, err)
	}
	if resp.StatusCode/100 != 2 {
		return "", &StatusError{Status: resp.StatusCode, msg: statusMessage(method, u, resp, data)}
	}
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			return "", fmt.Errorf("GitHub API %s %s: the answer is not %s: %w", method, u.Path, what, err)
		}
	}
	return resp.Header.Get("Link"), nil
}

// StatusError is an answer outside 2xx.
type StatusError struct {
	Status int
	msg    string
}

func (e *StatusError) Error() string { return e.msg }

// statusMessage names the status and GitHub's own message, never the token.
func statusMessage(method string, u *url.URL, resp *http.Response, body []byte) string {
	msg := fmt.Sprintf("GitHub API %s %s: %s", method, u.Path, resp.Status)
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		m := e.Message
		if len(m) > 200 {
			m = m[:200] + "…"
		}
		msg += ": " + m
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		msg += " (check GITHUB_TOKEN)"
	case (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusTooManyRequests) && resp.Header.Get("X-RateLimit-Remaining") == "0":
		msg += " (rate limit exhausted until " + resetTime(resp.Header.Get("X-RateLimit-Reset")) + ")"
	case resp.StatusCode == http.StatusNotFound:
		msg += " (check the repository, and that GITHUB_TOKEN may read its pull requests)"
	case resp.StatusCode == http.StatusForbidden:
		msg += " (check that GITHUB_TOKEN has the permission this needs)"
	}
	return msg
}

func resetTime(v string) string {
	var sec int64
	if _, err := fmt.Sscan(v, &sec); err != nil || sec <= 0 {
		return "later"
	}
	return time.Unix(sec, 0).UTC().Format(time.RFC3339)
}

// nextPage returns the rel="next" target of a Link header, nil when there is
// none. The token goes with every request, so a next page elsewhere than the
// API's own scheme and host is refused rather than followed.
func nextPage(base *url.URL, link string) (*url.URL, error) {
	for part := range strings.SplitSeq(link, ",") {
		target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
		if !ok {
			continue
		}
		target = strings.TrimSpace(target)
		if !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
			continue
		}
		isNext := false
		for p := range strings.SplitSeq(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.TrimSpace(k) != "rel" {
				continue
			}
			for rel := range strings.FieldsSeq(strings.Trim(strings.TrimSpace(v), `"`)) {
				if rel == "next" {
					isNext = true
				}
			}
		}
		if !isNext {
			continue
		}
		u, err := base.Parse(target[1 : len(target)-1])
		if err != nil {
			return nil, fmt.Errorf("GitHub API: the next page link %q is not a URL", target)
		}
		if u.Scheme != base.Scheme || u.Host != base.Host {
			return nil, fmt.Errorf("GitHub API: the next page is on %s://%s, not on the API's %s://%s; not following it with the token", u.Scheme, u.Host, base.Scheme, base.Host)
		}
		return u, nil
	}
	return nil, nil
}
