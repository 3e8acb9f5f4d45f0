package commenttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// Deployment is one deployment the stand-in recorded, with its statuses in
// the order they were posted.
type Deployment struct {
	ID          int64
	Repo        string
	Ref         string
	Environment string
	Transient   bool
	Production  bool
	AutoMerge   bool
	Statuses    []DeploymentStatus
}

// DeploymentStatus is one status of a deployment.
type DeploymentStatus struct {
	State          string
	EnvironmentURL string
	LogURL         string
	AutoInactive   bool
}

// deploymentStates are the states GitHub's API accepts for a status.
var deploymentStates = map[string]bool{"error": true, "failure": true, "inactive": true, "in_progress": true, "queued": true, "pending": true, "success": true}

func (s *Server) routeDeployments(mux *http.ServeMux) {
	mux.HandleFunc("POST /repos/{owner}/{repo}/deployments", s.ghCreateDeployment)
	mux.HandleFunc("GET /repos/{owner}/{repo}/deployments", s.ghListDeployments)
	mux.HandleFunc("POST /repos/{owner}/{repo}/deployments/{id}/statuses", s.ghCreateDeploymentStatus)
	mux.HandleFunc("GET /repos/{owner}/{repo}/pulls/{n}", s.ghPull)
}

// Deployments returns the deployments of repo (OWNER/NAME), oldest first.
func (s *Server) Deployments(repo string) []Deployment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Deployment
	for _, d := range s.deployments {
		if d.Repo == repo {
			c := *d
			c.Statuses = append([]DeploymentStatus(nil), d.Statuses...)
			out = append(out, c)
		}
	}
	return out
}

// SetPullRequest makes pull request n of repo have head commit sha.
func (s *Server) SetPullRequest(repo string, n int, sha string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pulls == nil {
		s.pulls = map[string]string{}
	}
	s.pulls[fmt.Sprintf("%s#%d", repo, n)] = sha
}

type ghDeployment struct {
	ID          int64  `json:"id"`
	NodeID      string `json:"node_id"`
	URL         string `json:"url"`
	Ref         string `json:"ref"`
	SHA         string `json:"sha"`
	Task        string `json:"task"`
	Environment string `json:"environment"`
	Transient   bool   `json:"transient_environment"`
	Production  bool   `json:"production_environment"`
}

func (s *Server) ghDeployment(d *Deployment) ghDeployment {
	return ghDeployment{ID: d.ID, NodeID: fmt.Sprintf("DE_%d", d.ID), URL: fmt.Sprintf("%s/repos/%s/deployments/%d", s.URL, d.Repo, d.ID),
		Ref: d.Ref, SHA: d.Ref, Task: "deploy", Environment: d.Environment, Transient: d.Transient, Production: d.Production}
}

func (s *Server) ghCreateDeployment(w http.ResponseWriter, r *http.Request) {
	if !s.enter(w, r, false) {
		return
	}
	var in struct {
		Ref              string    `json:"ref"`
		Environment      *string   `json:"environment"`
		AutoMerge        *bool     `json:"auto_merge"`
		RequiredContexts *[]string `json:"required_contexts"`
		Transient        bool      `json:"transient_environment"`
		Production       *bool     `json:"production_environment"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Ref == "" {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Invalid request.\n\n\"ref\" wasn't supplied."})
		return
	}
	env := "production" // GitHub's default environment
	if in.Environment != nil {
		env = *in.Environment
	}
	d := &Deployment{Repo: r.PathValue("owner") + "/" + r.PathValue("repo"), Ref: in.Ref, Environment: env, Transient: in.Transient,
		AutoMerge: in.AutoMerge == nil || *in.AutoMerge, Production: in.Production == nil && env == "production" || in.Production != nil && *in.Production}
	if d.AutoMerge {
		// The real API merges the default branch into ref first (202 with
		// a message) unless auto_merge is false; the stand-in records the
		// request so a test sees it was not asked for.
		writeJSON(w, http.StatusAccepted, map[string]string{"message": "Auto-merged main into " + in.Ref + " on deployment."})
		return
	}
	if in.RequiredContexts == nil {
		// The real API waits for every status check of ref: a test must see
		// the deployment ask for none.
		writeJSON(w, http.StatusConflict, map[string]string{"message": "Conflict: Commit status checks failed for " + in.Ref + "."})
		return
	}
	s.mu.Lock()
	s.next++
	d.ID = s.next
	s.deployments = append(s.deployments, d)
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, s.ghDeployment(d))
}

func (s *Server) ghListDeployments(w http.ResponseWriter, r *http.Request) {
	if !s.enter(w, r, false) {
		return
	}
	repo := r.PathValue("owner") + "/" + r.PathValue("repo")
	env := r.URL.Query().Get("environment")
	out := []ghDeployment{}
	s.mu.Lock()
	for i := len(s.deployments) - 1; i >= 0; i-- {
		d := s.deployments[i]
		if d.Repo == repo && (env == "" || d.Environment == env) {
			out = append(out, s.ghDeployment(d))
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) ghCreateDeploymentStatus(w http.ResponseWriter, r *http.Request) {
	if !s.enter(w, r, false) {
		return
	}
	var in struct {
		State          string `json:"state"`
		EnvironmentURL string `json:"environment_url"`
		LogURL         string `json:"log_url"`
		AutoInactive   *bool  `json:"auto_inactive"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || !deploymentStates[in.State] {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Validation Failed"})
		return
	}
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	repo := r.PathValue("owner") + "/" + r.PathValue("repo")
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.deployments {
		if d.ID != id || d.Repo != repo {
			continue
		}
		st := DeploymentStatus{State: in.State, EnvironmentURL: in.EnvironmentURL, LogURL: in.LogURL, AutoInactive: in.AutoInactive == nil || *in.AutoInactive}
		d.Statuses = append(d.Statuses, st)
		if st.State == "success" && st.AutoInactive {
			// GitHub marks the environment's earlier successful deployments
			// inactive.
			for _, o := range s.deployments {
				if o != d && o.Repo == repo && o.Environment == d.Environment && len(o.Statuses) > 0 && o.Statuses[len(o.Statuses)-1].State == "success" {
					o.Statuses = append(o.Statuses, DeploymentStatus{State: "inactive"})
				}
			}
		}
		s.next++
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": s.next, "state": st.State, "environment_url": st.EnvironmentURL, "log_url": st.LogURL})
		return
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
}

func (s *Server) ghPull(w http.ResponseWriter, r *http.Request) {
	if !s.enter(w, r, false) {
		return
	}
	key := r.PathValue("owner") + "/" + r.PathValue("repo") + "#" + r.PathValue("n")
	s.mu.Lock()
	sha, ok := s.pulls[key]
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
		return
	}
	n, _ := strconv.Atoi(r.PathValue("n"))
	writeJSON(w, http.StatusOK, map[string]any{"number": n, "state": "open", "head": map[string]any{"sha": sha, "ref": "feature"}})
}
