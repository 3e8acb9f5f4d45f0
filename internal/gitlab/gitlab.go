// Package gitlab is the small part of the GitLab REST API (v4) Sponson uses:
// the notes of a merge request, where `--comment` keeps one sticky summary.
// It is a client on net/http; the token goes only to the API's own host, in
// the header its kind asks for, and no error ever contains it.
package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/hostapi"
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
	return c.api().ParseBase(c.BaseURL, DefaultBaseURL, "")
}

// api is the REST API as this client calls it: the token in the header its
// kind asks for.
func (c *Client) api() *hostapi.API {
	h := http.Header{}
	h.Set("Accept", "application/json")
	switch {
	case c.Token != "":
		h.Set("PRIVATE-TOKEN", c.Token)
	case c.JobToken != "":
		h.Set("JOB-TOKEN", c.JobToken)
	}
	return &hostapi.API{Name: "GitLab API", Header: h, HTTP: c.HTTP, Hint: c.hint}
}

func (c *Client) do(ctx context.Context, method string, u *url.URL, body, v any, what string) (http.Header, error) {
	return c.api().Do(ctx, method, u, body, v, what)
}

// hint says what to do about a refused note, which depends on the token's
// kind.
func (c *Client) hint(resp *http.Response) string {
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		if c.Token == "" {
			return "CI_JOB_TOKEN may not write merge request notes on this GitLab; set SPONSON_GITLAB_TOKEN to a token with the api scope"
		}
		return "check that the token has the api scope and may comment on the merge request"
	}
	return ""
}
