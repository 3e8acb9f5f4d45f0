package statesrv

import (
	"net/http"
	"sync"
	"sync/atomic"
)

// Gate holds the engine's requests while the run decides whether an apply
// the engine has already started may go on (docs/design.md §8, the early
// apply): the engine starts, loads its plan and asks for the state
// lock while sponson still checks the plan, and nothing of the state is
// read or written before Open. Shut answers every held and later request
// as a lock held by someone else, so the engine ends without touching the
// state.
type Gate struct {
	decided chan struct{}
	once    sync.Once
	open    bool
	waiting atomic.Int64
}

// Hold makes every request of the server wait at the returned gate.
func (s *Server) Hold() *Gate {
	g := &Gate{decided: make(chan struct{})}
	s.mu.Lock()
	s.gate = g
	s.mu.Unlock()
	return g
}

// Open lets the held requests, and every later one, through.
func (g *Gate) Open() { g.decide(true) }

// Shut refuses the held requests, and every later one: the engine reads
// them as a lock held by another run and ends.
func (g *Gate) Shut() { g.decide(false) }

func (g *Gate) decide(open bool) {
	g.once.Do(func() {
		g.open = open
		close(g.decided)
	})
}

// Waiting is how many requests wait at the gate now.
func (g *Gate) Waiting() int { return int(g.waiting.Load()) }

// pass waits for the decision on r; false when r must be refused (the gate
// shut, or the engine gave up on the request).
func (g *Gate) pass(r *http.Request) bool {
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case <-g.decided:
		return g.open
	case <-r.Context().Done():
		return false
	}
}

// gated reports whether a request may go on, waiting at the gate if one is
// held.
func (s *Server) gated(r *http.Request) bool {
	s.mu.Lock()
	g := s.gate
	s.mu.Unlock()
	return g == nil || g.pass(r)
}
