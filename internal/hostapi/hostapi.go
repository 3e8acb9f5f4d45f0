// Package hostapi sends the requests of Sponson's small clients of code-host
// REST APIs (internal/github, internal/gitlab): one request with an optional
// JSON body, a 2xx answer decoded as JSON, and errors that name the method,
// the path, the status and the host's own message. The token travels only in
// the headers the client sets, and no error ever contains it.
package hostapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// DefaultTimeout bounds a request when the client names no *http.Client.
const DefaultTimeout = 30 * time.Second

// answerLimit bounds what is read of one answer, so that a server that never
// stops sending cannot exhaust memory.
const answerLimit = 32 << 20

// messageLimit is how much of the host's own message an error repeats.
const messageLimit = 200

// API is one host's REST API as a client calls it.
type API struct {
	// Name starts every error ("GitHub API").
	Name string
	// Header is sent with every request: what to accept, the API version,
	// the token. User-Agent and, with a body, Content-Type are added.
	Header http.Header
	// HTTP is the client used; one with DefaultTimeout when nil.
	HTTP *http.Client
	// Hint, when set, says what to do about an answer outside 2xx (check
	// the token, wait for the rate limit); it is added to the error in
	// parentheses when not empty.
	Hint func(*http.Response) string
}

// StatusError is an answer outside 2xx.
type StatusError struct {
	// Status is the HTTP status code.
	Status int
	msg    string
}

func (e *StatusError) Error() string { return e.msg }

// ParseBase checks an API root: http(s), with a host and without
// credentials (the token goes in a header, never in the URL). def is used
// when raw is empty; credentialsHint ends the error about credentials.
func (a *API) ParseBase(raw, def, credentialsHint string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		raw = def
	}
	u, err := url.Parse(strings.TrimSuffix(raw, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("%s URL %q is not an http(s) URL", a.Name, raw)
	}
	if u.User != nil {
		return nil, errors.New(a.Name + " URL must not hold credentials" + credentialsHint)
	}
	if !strings.HasPrefix(u.Path, "/") {
		u.Path = "/" + u.Path
	}
	return u, nil
}

// Do sends one request to u, with body (when not nil) as JSON, and decodes a
// 2xx answer into v (when not nil); what names v in words for the error when
// the answer is not that. It returns the answer's headers, which carry the
// next page.
func (a *API) Do(ctx context.Context, method string, u *url.URL, body, v any, what string) (http.Header, error) {
	where := a.Name + " " + method + " " + u.EscapedPath()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	for k, vs := range a.Header {
		req.Header[k] = slices.Clone(vs)
	}
	req.Header.Set("User-Agent", "sponson")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := a.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	resp, err := hc.Do(req)
	if err != nil {
		// A *url.Error names the URL, which never holds the token.
		return nil, fmt.Errorf("%s: %w", a.Name, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, answerLimit))
	if err != nil {
		return nil, fmt.Errorf("%s: reading the answer: %w", where, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, &StatusError{Status: resp.StatusCode, msg: a.statusMessage(where, resp, data)}
	}
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			return nil, fmt.Errorf("%s: the answer is not %s: %w", where, what, err)
		}
	}
	return resp.Header, nil
}

// statusMessage names the status and the host's own message: "message" (a
// string on GitHub, a string or an object of field errors on GitLab), else
// "error" (GitLab's OAuth errors), cut to messageLimit bytes.
func (a *API) statusMessage(where string, resp *http.Response, body []byte) string {
	msg := where + ": " + resp.Status
	var e struct {
		Message any    `json:"message"`
		Error   string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil {
		m := e.Error
		if e.Message != nil {
			m = fmt.Sprint(e.Message)
		}
		if len(m) > messageLimit {
			m = m[:messageLimit] + "…"
		}
		if m != "" {
			msg += ": " + m
		}
	}
	if a.Hint != nil {
		if h := a.Hint(resp); h != "" {
			msg += " (" + h + ")"
		}
	}
	return msg
}
