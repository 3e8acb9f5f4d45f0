// Package gitlab is the small part of the GitLab REST API (v4) Sponson uses:
// the notes of a merge request, where `--comment` keeps one sticky summary.
// It is a client on net/http; the token goes only to the API's own host, in
// the header its kind asks for, and no error ever contains it.
package gitlab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultBaseURL is the API of gitlab.com; GitLab CI names its own in
// CI_API_V4_URL.
const DefaultBaseURL = "https://gitlab.com/api/v4"

// NoteLimit is the largest note body GitLab takes, in characters.
const NoteLimit = 1_000_000

const perPage = 100

// maxPages bounds one listing, so that a server that keeps answering with a
// next page cannot loop us.
const maxPages = 100

// Client calls the GitLab REST API.
type Client struct {
	// BaseURL is the API root (…/api/v4), DefaultBaseURL when empty.
	BaseURL string
	// Token is a personal, project or group access token, sent as
	// PRIVATE-TOKEN; JobToken is CI_JOB_TOKEN, sent as JOB-TOKEN. Token wins
	// when both are set.
	Token    string
	JobToken string
	// HTTP is the client used; one with a 30 s timeout when nil.
	HTTP *http.Client
}

// Note is a merge request note: the fields of the API's note object Sponson
// reads.
type Note struct {
	ID     int64  `json:"id"`
	Body   string `json:"body"`
	System bool   `json:"system"`
}

// StatusError is an answer outside 2xx.
type StatusError struct {
	Status int
	msg    string
}

func (e *StatusError) Error() string { return e.msg }

// Notes lists the notes of merge request iid of project (its numeric id or
// its URL-encoded path): GET /projects/:id/merge_requests/:iid/notes, every
// page (X-Next-Page).
func (c *Client) Notes(ctx context.Context, project string, iid int) ([]Note, error) {
	u, err := c.notesURL(project, iid)
	if err != nil {
		return nil, err
	}
	var out []Note
	page := "1"
	for n := 0; page != ""; n++ {
		if n >= maxPages {
			return nil, fmt.Errorf("GitLab API: more than %d pages of notes on !%d; stopped", maxPages, iid)
		}
		u.RawQuery = url.Values{"per_page": {fmt.Sprint(perPage)}, "page": {page}, "sort": {"asc"}}.Encode()
		var ns []Note
		h, err := c.do(ctx, http.MethodGet, u, nil, &ns, "a list of notes")
		if err != nil {
			return nil, err
		}
		out = append(out, ns...)
		page = strings.TrimSpace(h.Get("X-Next-Page"))
		if _, err := strconv.Atoi(page); page != "" && err != nil {
			return nil, fmt.Errorf("GitLab API: X-Next-Page %q is not a page number", page)
		}
	}
	return out, nil
}

// CreateNote posts a note: POST /projects/:id/merge_requests/:iid/notes.
func (c *Client) CreateNote(ctx context.Context, project string, iid int, body string) (Note, error) {
	u, err := c.notesURL(project, iid)
	if err != nil {
		return Note{}, err
	}
	var out Note
	_, err = c.do(ctx, http.MethodPost, u, map[string]string{"body": body}, &out, "a note")
	return out, err
}

// UpdateNote replaces a note's body: PUT
// /projects/:id/merge_requests/:iid/notes/:note_id.
func (c *Client) UpdateNote(ctx context.Context, project string, iid int, id int64, body string) (Note, error) {
	u, err := c.notesURL(project, iid)
	if err != nil {
		return Note{}, err
	}
	u = u.JoinPath(fmt.Sprint(id))
	var out Note
	_, err = c.do(ctx, http.MethodPut, u, map[string]string{"body": body}, &out, "a note")
	return out, err
}

func (c *Client) notesURL(project string, iid int) (*url.URL, error) {
	project = strings.TrimSpace(project)
	if project == "" {
		return nil, errors.New("no GitLab project (CI_PROJECT_ID)")
	}
	if iid <= 0 {
		return nil, fmt.Errorf("merge request %d is not positive", iid)
	}
	base, err := c.base()
	if err != nil {
		return nil, err
	}
	// A path ("group/app") is one URL-encoded segment of the API path.
	u := *base
	u.RawPath = strings.TrimSuffix(base.EscapedPath(), "/") + "/projects/" + url.PathEscape(project) + "/merge_requests/" + fmt.Sprint(iid) + "/notes"
	u.Path, _ = url.PathUnescape(u.RawPath)
	return &u, nil
}

func (c *Client) base() (*url.URL, error) {
	raw := strings.TrimSpace(c.BaseURL)
	if raw == "" {
		raw = DefaultBaseURL
	}
	u, err := url.Parse(strings.TrimSuffix(raw, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("GitLab API URL %q is not an http(s) URL", raw)
	}
	if u.User != nil {
		return nil, errors.New("GitLab API URL must not hold credentials")
	}
	return u, nil
}

func (c *Client) do(ctx context.Context, method string, u *url.URL, body, v any, what string) (http.Header, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("GitLab API %s %s: %w", method, u.EscapedPath(), err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "sponson")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	switch {
	case c.Token != "":
		req.Header.Set("PRIVATE-TOKEN", c.Token)
	case c.JobToken != "":
		req.Header.Set("JOB-TOKEN", c.JobToken)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GitLab API: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, fmt.Errorf("GitLab API %s %s: reading the answer: %w", method, u.EscapedPath(), err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, &StatusError{Status: resp.StatusCode, msg: c.statusMessage(method, u, resp, data)}
	}
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			return nil, fmt.Errorf("GitLab API %s %s: the answer is not %s: %w", method, u.EscapedPath(), what, err)
		}
	}
	return resp.Header, nil
}

// statusMessage names the status and GitLab's own message, never the token.
func (c *Client) statusMessage(method string, u *url.URL, resp *http.Response, body []byte) string {
	msg := fmt.Sprintf("GitLab API %s %s: %s", method, u.EscapedPath(), resp.Status)
	var e struct {
		Message any    `json:"message"`
		Error   string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil {
		m := e.Error
		if e.Message != nil {
			m = fmt.Sprint(e.Message)
		}
		if len(m) > 200 {
			m = m[:200] + "…"
		}
		if m != "" {
			msg += ": " + m
		}
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		if c.Token == "" {
			msg += " (CI_JOB_TOKEN may not write merge request notes on this GitLab; set SPONSON_GITLAB_TOKEN to a token with the api scope)"
		} else {
			msg += " (check that the token has the api scope and may comment on the merge request)"
		}
	}
	return msg
}
