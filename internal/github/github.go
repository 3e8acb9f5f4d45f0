// Package github reads what Sponson needs from the GitHub REST API: the open
// pull requests of a repository, which `sponson gc` compares with the pr-<n>
// scopes of an environment. It is a small client on net/http: the token is
// sent only to the API's own host, and no error ever contains it.
package github

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/hostapi"
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
	return c.api().ParseBase(c.BaseURL, DefaultBaseURL, "; set GITHUB_TOKEN")
}

// api is the REST API as this client calls it: GitHub's media type and
// version, the token as a bearer token.
func (c *Client) api() *hostapi.API {
	h := http.Header{}
	h.Set("Accept", "application/vnd.github+json")
	h.Set("X-GitHub-Api-Version", APIVersion)
	if c.Token != "" {
		h.Set("Authorization", "Bearer "+c.Token)
	}
	return &hostapi.API{Name: "GitHub API", Header: h, HTTP: c.HTTP, Hint: hint}
}

// get fetches one page into v and returns its Link header.
func (c *Client) get(ctx context.Context, u *url.URL, v any) (string, error) {
	return c.do(ctx, http.MethodGet, u, nil, v, "a list of pull requests")
}

// do sends one request (hostapi.API.Do) and returns the answer's Link
// header, which names the next page.
func (c *Client) do(ctx context.Context, method string, u *url.URL, body, v any, what string) (string, error) {
	h, err := c.api().Do(ctx, method, u, body, v, what)
	if err != nil {
		return "", err
	}
	return h.Get("Link"), nil
}

// hint says what to do about an answer outside 2xx.
func hint(resp *http.Response) string {
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return "check GITHUB_TOKEN"
	case (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusTooManyRequests) && resp.Header.Get("X-RateLimit-Remaining") == "0":
		return "rate limit exhausted until " + resetTime(resp.Header.Get("X-RateLimit-Reset"))
	case resp.StatusCode == http.StatusNotFound:
		return "check the repository, and that GITHUB_TOKEN may read its pull requests"
	case resp.StatusCode == http.StatusForbidden:
		return "check that GITHUB_TOKEN has the permission this needs"
	}
	return ""
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
