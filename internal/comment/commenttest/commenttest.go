// Package commenttest is a local stand-in for the part of the GitHub and
// GitLab REST APIs that package comment uses, with the request and response
// shapes of their documentation: GitHub's issue comments (list with Link
// pagination, create, update; bodies over 65,536 characters refused with
// 422) and GitLab's merge request notes (list with X-Next-Page, create,
// update; PRIVATE-TOKEN or JOB-TOKEN), and GitHub's deployments (create,
// list by environment, statuses) and the head of a pull request
// (deployments.go). Tests can make it answer 403 or 5xx.
package commenttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Comment is one stored comment or note.
type Comment struct {
	ID     int64
	Thread string // "owner/repo#42" or "project!7"
	Body   string
}

// Server is the stand-in. Fail, when not zero, is the status every request
// gets (403, 500, 502, ...).
type Server struct {
	*httptest.Server
	// Token is the only token accepted (bearer on GitHub, PRIVATE-TOKEN or
	// JOB-TOKEN on GitLab).
	Token string
	// PerPage is the page size of listings (GitHub's default is 30).
	PerPage int

	mu       sync.Mutex
	fail     int
	next     int64
	comments []Comment
	requests []string
	// deployments and pulls: deployments.go.
	deployments []*Deployment
	pulls       map[string]string
}

// New starts a server; Close it when done.
func New(token string) *Server {
	s := &Server{Token: token, PerPage: 30, next: 1000}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /repos/{owner}/{repo}/issues/{n}/comments", s.ghList)
	mux.HandleFunc("POST /repos/{owner}/{repo}/issues/{n}/comments", s.ghCreate)
	mux.HandleFunc("PATCH /repos/{owner}/{repo}/issues/comments/{id}", s.ghUpdate)
	mux.HandleFunc("GET /api/v4/projects/{project}/merge_requests/{iid}/notes", s.glList)
	mux.HandleFunc("POST /api/v4/projects/{project}/merge_requests/{iid}/notes", s.glCreate)
	mux.HandleFunc("PUT /api/v4/projects/{project}/merge_requests/{iid}/notes/{id}", s.glUpdate)
	s.routeDeployments(mux)
	s.Server = httptest.NewServer(mux)
	return s
}

// GitLabURL is the API root as CI_API_V4_URL names it.
func (s *Server) GitLabURL() string { return s.URL + "/api/v4" }

// Fail makes every later request answer status (0: answer normally).
func (s *Server) Fail(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = status
}

// Seed stores a comment as if someone had posted it.
func (s *Server) Seed(thread, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	s.comments = append(s.comments, Comment{ID: s.next, Thread: thread, Body: body})
	return s.next
}

// Comments returns the comments of a thread, oldest first.
func (s *Server) Comments(thread string) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Comment
	for _, c := range s.comments {
		if c.Thread == thread {
			out = append(out, c)
		}
	}
	return out
}

// Requests returns "METHOD path" of every request so far.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

func (s *Server) enter(w http.ResponseWriter, r *http.Request, gitlab bool) bool {
	s.mu.Lock()
	s.requests = append(s.requests, r.Method+" "+r.URL.Path)
	fail := s.fail
	s.mu.Unlock()
	if fail != 0 {
		writeJSON(w, fail, map[string]string{"message": http.StatusText(fail)})
		return false
	}
	ok := r.Header.Get("Authorization") == "Bearer "+s.Token
	if gitlab {
		ok = r.Header.Get("PRIVATE-TOKEN") == s.Token || r.Header.Get("JOB-TOKEN") == s.Token
	}
	if !ok || s.Token == "" {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

type ghComment struct {
	ID      int64  `json:"id"`
	NodeID  string `json:"node_id"`
	URL     string `json:"url"`
	HTMLURL string `json:"html_url"`
	Body    string `json:"body"`
	User    struct {
		Login string `json:"login"`
	} `json:"user"`
}

func (s *Server) gh(c Comment, owner, repo string) ghComment {
	g := ghComment{ID: c.ID, NodeID: fmt.Sprintf("IC_%d", c.ID), Body: c.Body,
		URL:     fmt.Sprintf("%s/repos/%s/%s/issues/comments/%d", s.URL, owner, repo, c.ID),
		HTMLURL: fmt.Sprintf("https://github.com/%s/%s/pull/0#issuecomment-%d", owner, repo, c.ID)}
	g.User.Login = "github-actions[bot]"
	return g
}

func (s *Server) thread(r *http.Request) string {
	if p := r.PathValue("project"); p != "" {
		return p + "!" + r.PathValue("iid")
	}
	return r.PathValue("owner") + "/" + r.PathValue("repo") + "#" + r.PathValue("n")
}

func (s *Server) page(r *http.Request, all []Comment) ([]Comment, int, bool) {
	per := s.PerPage
	if v, err := strconv.Atoi(r.URL.Query().Get("per_page")); err == nil && v > 0 && v <= 100 {
		per = v
	}
	page := 1
	if v, err := strconv.Atoi(r.URL.Query().Get("page")); err == nil && v > 0 {
		page = v
	}
	from := min((page-1)*per, len(all))
	to := min(from+per, len(all))
	return all[from:to], page, to < len(all)
}

func (s *Server) ghList(w http.ResponseWriter, r *http.Request) {
	if !s.enter(w, r, false) {
		return
	}
	cs, page, more := s.page(r, s.Comments(s.thread(r)))
	out := []ghComment{}
	for _, c := range cs {
		out = append(out, s.gh(c, r.PathValue("owner"), r.PathValue("repo")))
	}
	if more {
		q := r.URL.Query()
		q.Set("page", fmt.Sprint(page+1))
		w.Header().Set("Link", fmt.Sprintf(`<%s%s?%s>; rel="next"`, s.URL, r.URL.Path, q.Encode()))
	}
	writeJSON(w, http.StatusOK, out)
}

// tooLong is GitHub's answer to a body past its limit.
func tooLong(w http.ResponseWriter, body string) bool {
	if utf8.RuneCountInString(body) <= 65536 {
		return false
	}
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
		"message": "Validation Failed",
		"errors":  []map[string]string{{"resource": "IssueComment", "code": "custom", "field": "body", "message": "body is too long (maximum is 65536 characters)"}},
	})
	return true
}

func readBody(w http.ResponseWriter, r *http.Request) (string, bool) {
	var in struct {
		Body *string `json:"body"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Body == nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "Problems parsing JSON"})
		return "", false
	}
	return *in.Body, true
}

func (s *Server) ghCreate(w http.ResponseWriter, r *http.Request) {
	if !s.enter(w, r, false) {
		return
	}
	body, ok := readBody(w, r)
	if !ok || tooLong(w, body) {
		return
	}
	id := s.Seed(s.thread(r), body)
	writeJSON(w, http.StatusCreated, s.gh(Comment{ID: id, Body: body}, r.PathValue("owner"), r.PathValue("repo")))
}

func (s *Server) ghUpdate(w http.ResponseWriter, r *http.Request) {
	if !s.enter(w, r, false) {
		return
	}
	body, ok := readBody(w, r)
	if !ok || tooLong(w, body) {
		return
	}
	c, found := s.update(r.PathValue("id"), "", body)
	if !found {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
		return
	}
	writeJSON(w, http.StatusOK, s.gh(c, r.PathValue("owner"), r.PathValue("repo")))
}

var threadRe = regexp.MustCompile(`^(.*)!(\d+)$`)

func (s *Server) update(idText, thread, body string) (Comment, bool) {
	id, _ := strconv.ParseInt(idText, 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range s.comments {
		if c.ID == id && (thread == "" || c.Thread == thread) {
			s.comments[i].Body = body
			return s.comments[i], true
		}
	}
	return Comment{}, false
}

type glNote struct {
	ID     int64  `json:"id"`
	Type   any    `json:"type"`
	Body   string `json:"body"`
	System bool   `json:"system"`
	Author struct {
		Username string `json:"username"`
	} `json:"author"`
	NoteableType string `json:"noteable_type"` //nolint:misspell // GitLab's own field name
	NoteableIID  int    `json:"noteable_iid"`  //nolint:misspell // GitLab's own field name
}

func gl(c Comment) glNote {
	n := glNote{ID: c.ID, Body: c.Body, NoteableType: "MergeRequest"}
	if m := threadRe.FindStringSubmatch(c.Thread); m != nil {
		n.NoteableIID, _ = strconv.Atoi(m[2])
	}
	n.Author.Username = "project_7_bot"
	return n
}

func (s *Server) glList(w http.ResponseWriter, r *http.Request) {
	if !s.enter(w, r, true) {
		return
	}
	all := s.Comments(s.thread(r))
	if r.URL.Query().Get("sort") != "asc" {
		sort.Slice(all, func(i, j int) bool { return all[i].ID > all[j].ID })
	}
	cs, page, more := s.page(r, all)
	out := []glNote{}
	for _, c := range cs {
		out = append(out, gl(c))
	}
	w.Header().Set("X-Page", fmt.Sprint(page))
	if more {
		w.Header().Set("X-Next-Page", fmt.Sprint(page+1))
	} else {
		w.Header().Set("X-Next-Page", "")
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) glCreate(w http.ResponseWriter, r *http.Request) {
	if !s.enter(w, r, true) {
		return
	}
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	id := s.Seed(s.thread(r), body)
	writeJSON(w, http.StatusCreated, gl(Comment{ID: id, Thread: s.thread(r), Body: body}))
}

func (s *Server) glUpdate(w http.ResponseWriter, r *http.Request) {
	if !s.enter(w, r, true) {
		return
	}
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	c, found := s.update(r.PathValue("id"), s.thread(r), body)
	if !found {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "404 Not found"})
		return
	}
	writeJSON(w, http.StatusOK, gl(c))
}
