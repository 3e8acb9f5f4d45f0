package overview

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"net"
	"net/http"
	"strings"
)

// The paths `sponson serve` answers.
const (
	PagePath = "/"
	JSONPath = "/overview.json"
)

// Handler serves the overview read-only (docs/design.md §4.8): the page at
// PagePath, polling the model at JSONPath to redraw itself when the store
// changes. Only GET and HEAD are answered (405 otherwise): there is no
// write path. With a token, every request must carry it, as
// "Authorization: Bearer TOKEN" (what a reverse proxy adds) or as the
// query parameter token (what a browser's address bar carries, and the
// page passes on to its poll). build reads the store anew for each
// request.
func Handler(build func(context.Context) (*Model, error), token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "read-only: GET and HEAD only", http.StatusMethodNotAllowed)
			return
		}
		if token != "" && !tokenGiven(r, token) {
			h.Set("WWW-Authenticate", `Bearer realm="sponson"`)
			http.Error(w, "a token is needed: Authorization: Bearer TOKEN, or ?token=TOKEN", http.StatusUnauthorized)
			return
		}
		if r.URL.Path != PagePath && r.URL.Path != JSONPath {
			http.NotFound(w, r)
			return
		}
		m, err := build(r.Context())
		if err != nil {
			// The error names the store and what failed, as status prints it.
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		var b bytes.Buffer
		if r.URL.Path == JSONPath {
			h.Set("Content-Type", "application/json")
			err = json.NewEncoder(&b).Encode(m)
		} else {
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; connect-src 'self'")
			poll := strings.TrimPrefix(JSONPath, "/")
			if t := r.URL.Query().Get("token"); token != "" && subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
				poll += "?token=" + t
			}
			err = Render(&b, m, RenderOptions{Live: true, PollURL: poll})
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(b.Bytes())
	})
}

func tokenGiven(r *http.Request, token string) bool {
	given := r.URL.Query().Get("token")
	if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		given = strings.TrimSpace(a)
	}
	return given != "" && subtle.ConstantTimeCompare([]byte(given), []byte(token)) == 1
}

// Loopback reports whether addr (host:port) listens on the loopback
// interface alone: 127.0.0.0/8, ::1 or localhost. An empty host is every
// interface.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
