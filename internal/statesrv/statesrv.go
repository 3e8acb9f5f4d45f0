// Package statesrv serves one scope's Terraform state to the engine over
// OpenTofu's and Terraform's `http` backend protocol, on 127.0.0.1 only.
// Every state write is a fenced write of the store: the server holds no lease
// of its own but hands each write to the run's held lease (Writer), so an
// engine whose run lost its lease cannot replace the state of the run that
// took over, and the lease itself notices that it is lost.
//
// Protocol (measured, docs/design.md §7.3): GET reads, POST <address>?ID=<lock>
// writes, LOCK and UNLOCK carry a JSON lock info; 409 or 423 means "locked".
//
// The engine finds the server through a backend override (an empty
// `backend "http" {}`, engine.PlaceOverride) and the TF_HTTP_* variables of
// Environ, so the address and the run's secret are never on disk; a request
// without the secret is refused. Each scope keeps its own TF_DATA_DIR, so
// switching scopes never needs a re-init. Gate holds the requests of an
// apply started before the run decided to apply (docs/design.md §8, the
// early apply).
package statesrv

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Username is the basic-auth user the engine presents; the password is the
// per-run secret.
const Username = "sponson"

// maxStateBytes bounds a state upload; larger bodies are refused rather than
// read into memory without limit.
const maxStateBytes = 512 << 20

// Writer is the one write the server makes: the scope's state, fenced by
// the run's lease (*lease.Held). A write refused because the lease is gone
// returns an error wrapping store.ErrLeaseLost.
type Writer interface {
	WriteState(ctx context.Context, state []byte) error
}

// Reader is what the server reads: the scope's state.
type Reader = store.StateReader

// Server is a running state server.
type Server struct {
	st      Reader
	key     store.Key
	w       Writer // nil: read-only
	secret  string
	srv     *http.Server
	ln      net.Listener
	mu      sync.Mutex
	lockID  string // the engine's own lock, within this run
	lockRaw []byte
	writes  int
	gate    *Gate // nil: requests go through at once
}

// Start listens on a random loopback port and serves key's state from st;
// writes go to w. A nil w (a plan, which holds no lease) makes the server
// read-only.
func Start(st Reader, key store.Key, w Writer) (*Server, error) {
	secret := make([]byte, 24)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("state server: %w", err)
	}
	s := &Server{st: st, key: key, w: w, secret: hex.EncodeToString(secret), ln: ln}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln) //nolint:errcheck // Serve returns ErrServerClosed on Close
	return s, nil
}

// Address is the state URL to give the engine.
func (s *Server) Address() string { return "http://" + s.ln.Addr().String() + "/state" }

// Secret is the password the engine must present.
func (s *Server) Secret() string { return s.secret }

// Environ returns the TF_HTTP_* variables that configure an empty
// `backend "http" {}` block. They are read at every engine start and are not
// stored in the engine's backend state, so the secret never lands on disk.
func (s *Server) Environ() []string {
	a := s.Address()
	return []string{
		"TF_HTTP_ADDRESS=" + a,
		"TF_HTTP_LOCK_ADDRESS=" + a,
		"TF_HTTP_UNLOCK_ADDRESS=" + a,
		"TF_HTTP_USERNAME=" + Username,
		"TF_HTTP_PASSWORD=" + s.secret,
		"TF_HTTP_RETRY_MAX=2",
	}
}

// Writes returns how many state writes the server accepted.
func (s *Server) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

func (s *Server) authorized(r *http.Request) bool {
	user, pass, ok := r.BasicAuth()
	return ok && user == Username && subtle.ConstantTimeCompare([]byte(pass), []byte(s.secret)) == 1
}

// ServeHTTP implements the http backend protocol.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="sponson"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if r.URL.Path != "/state" {
		http.NotFound(w, r)
		return
	}
	if !s.gated(r) {
		http.Error(w, "sponson: this run did not let the engine apply (its checks refused the plan, or it was interrupted)", http.StatusLocked)
		return
	}
	switch r.Method {
	case http.MethodGet:
		s.get(w, r)
	case http.MethodPost:
		s.post(w, r)
	case "LOCK":
		s.lock(w, r)
	case "UNLOCK":
		s.unlock(w, r)
	default:
		// DELETE would drop the scope's whole state; Sponson destroys a
		// scope through the engine, never by deleting its state.
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	data, err := s.st.ReadState(r.Context(), s.key)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if data == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(data) //nolint:errcheck // the engine sees a short read
}

func (s *Server) post(w http.ResponseWriter, r *http.Request) {
	if s.w == nil {
		http.Error(w, "this sponson run is read-only (plan): it holds no lease and writes no state", http.StatusForbidden)
		return
	}
	s.mu.Lock()
	held := s.lockID
	s.mu.Unlock()
	if id := r.URL.Query().Get("ID"); held != "" && id != held {
		http.Error(w, "state is locked by "+held, http.StatusConflict)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxStateBytes+1))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) > maxStateBytes {
		http.Error(w, "state too large", http.StatusRequestEntityTooLarge)
		return
	}
	if sum := r.Header.Get("Content-MD5"); sum != "" {
		got := md5.Sum(body)
		if base64.StdEncoding.EncodeToString(got[:]) != sum {
			http.Error(w, "Content-MD5 mismatch", http.StatusBadRequest)
			return
		}
	}
	if !json.Valid(body) {
		http.Error(w, "state is not JSON", http.StatusBadRequest)
		return
	}
	if err := s.w.WriteState(r.Context(), body); err != nil {
		if errors.Is(err, store.ErrLeaseLost) {
			http.Error(w, "sponson: the run's lease of "+s.key.String()+" was lost; this state write is refused (LOCK_LOST)", http.StatusConflict)
			return
		}
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.mu.Lock()
	s.writes++
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

type lockInfo struct {
	ID string `json:"ID"`
}

func (s *Server) lock(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var info lockInfo
	if err := json.Unmarshal(raw, &info); err != nil || info.ID == "" {
		http.Error(w, "lock info must be JSON with an ID", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lockID != "" && s.lockID != info.ID {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusLocked)
		w.Write(s.lockRaw) //nolint:errcheck
		return
	}
	s.lockID, s.lockRaw = info.ID, bytes.Clone(raw)
	w.WriteHeader(http.StatusOK)
}

func (s *Server) unlock(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var info lockInfo
	_ = json.Unmarshal(raw, &info)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lockID != "" && info.ID != "" && info.ID != s.lockID {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		w.Write(s.lockRaw) //nolint:errcheck
		return
	}
	s.lockID, s.lockRaw = "", nil
	w.WriteHeader(http.StatusOK)
}
