package manystacks

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/internal/stackgraph"
	"github.com/sponson/terraform-provider-sponson/internal/stackmove"
	"github.com/sponson/terraform-provider-sponson/internal/stackrun"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// A stack whose directory the change moved (RenamedTo) keeps its
// resources: its state moves to the new stack (internal/stackmove),
// nothing is destroyed or created (docs/design.md §4.7 "Many stacks",
// removed stacks). A plan shows the move in the review; an apply performs
// it, approved as a destroy in the environment would be, right before the
// new stack's own run, so that run finds the state and plans no change.

// StackMove is the move of a renamed stack's scopes to its new stack, as
// a run of many stacks reports it.
type StackMove struct {
	From          string `json:"from"`
	To            string `json:"to"`
	FromDirectory string `json:"fromDirectory"`
	ToDirectory   string `json:"toDirectory"`
	Environment   string `json:"environment"`
	// Applied is true when the run moved the state, false when it only
	// shows the move (a plan).
	Applied bool         `json:"applied"`
	Scopes  []MovedScope `json:"scopes"`
}

// MovedScope is one scope of a move: how many resources its ledger holds,
// and what the move did (stackmove.Action: start, resume, done, nothing;
// "planned" in a plan).
type MovedScope struct {
	Scope     string `json:"scope"`
	Resources int    `json:"resources"`
	Action    string `json:"action"`
}

// Resources is the number of resources the move carries, all scopes.
func (m *StackMove) Resources() int {
	n := 0
	for _, s := range m.Scopes {
		n += s.Resources
	}
	return n
}

// Outcome is the move for the review: "moved from DIR to DIR: N
// resources, no changes".
func (m *StackMove) Outcome() string {
	var scopes []string
	for _, s := range m.Scopes {
		scopes = append(scopes, s.Scope)
	}
	out := fmt.Sprintf("moved from %s to %s: %d %s, no changes", m.FromDirectory, m.ToDirectory, m.Resources(), cmdutil.Plural(m.Resources(), "resource", "resources"))
	if len(scopes) > 0 {
		out += " (" + m.Environment + ": " + strings.Join(scopes, ", ") + ")"
	}
	if !m.Applied {
		out += "; the state moves, nothing is destroyed or created, when the merge is applied"
	}
	return out
}

// mover is what a run of many stacks needs to move a renamed stack's
// state: the store, the context flags, the approver, and the lease's
// waiting.
type mover struct {
	getenv      func(string) string
	storeFlag   string
	approvedBy  string
	wait        bool
	waitTimeout time.Duration
	// leaseTTL is --lease-ttl: the TTL of both leases of a move
	// (lease.DefaultTTL when zero).
	leaseTTL time.Duration
}

// storeFor opens the one store both stacks keep their state in: a move
// between the stores of two directories (no --store) is refused.
func (mv *mover) storeFor(r *RemovedStack) (store.Store, error) {
	raw := storeOf(mv.getenv, mv.storeFlag)
	if raw == "" {
		return nil, errcode.New(errcode.Usage, "the change moved %s to %s, and without --store (or %s) each keeps its state in its own directory: a stack's state moves within one store", r.Directory, r.RenamedDirectory, storeurl.EnvVar).
			WithHint(fmt.Sprintf("Give every stack one store (--store or %s), or keep the stack's name: declare stack = %q in the sponson_scope of %s.", storeurl.EnvVar, r.Name, r.RenamedDirectory))
	}
	st, _, err := storeurl.OpenFor(raw, r.Dir, r.Environment)
	return st, err
}

// preview is the move a plan shows: the scopes of the old stack that hold
// state, with their resources; nothing is written.
func (mv *mover) preview(ctx context.Context, r *RemovedStack) (*StackMove, error) {
	m := newStackMove(r)
	if r.ScopesError != "" {
		return m, errcode.New(errcode.Internal, "cannot list the scopes of %s: %s", r.Name, r.ScopesError)
	}
	st, err := mv.storeFor(r)
	if err != nil {
		return m, err
	}
	defer st.Close()
	for _, sc := range r.Scopes {
		rec, err := store.Latest(ctx, st, store.Key{Stack: r.Name, Environment: r.Environment, Scope: sc})
		if err != nil {
			return m, err
		}
		n := 0
		if rec != nil {
			n = len(rec.Ledger)
		}
		m.Scopes = append(m.Scopes, MovedScope{Scope: sc, Resources: n, Action: "planned"})
	}
	return m, nil
}

// apply moves every scope of the old stack that holds state to the new
// stack, approved for the environment as its apply is.
func (mv *mover) apply(ctx context.Context, r *RemovedStack) (*StackMove, error) {
	m := newStackMove(r)
	m.Applied = true
	if r.ScopesError != "" {
		return m, errcode.New(errcode.Internal, "cannot list the scopes of %s: %s", r.Name, r.ScopesError)
	}
	approval, err := cmdutil.EditApproval(mv.getenv, r.Dir, r.Environment, "apply --changed (moving "+r.Directory+" to "+r.RenamedDirectory+")", mv.approvedBy)
	if err != nil {
		return m, err
	}
	st, err := mv.storeFor(r)
	if err != nil {
		return m, err
	}
	defer st.Close()
	for _, sc := range r.Scopes {
		res, err := stackmove.Move(ctx, stackmove.Options{
			Store: st, Environment: r.Environment, Scope: sc, From: r.Name, To: r.RenamedTo,
			RunID: scoperun.NewRunID(), Actor: runctx.DetectJob(mv.getenv).Actor, Approval: approval,
			Lease: lease.Config{TTL: mv.leaseTTL, Wait: mv.wait, WaitTimeout: mv.waitTimeout},
		})
		if err != nil {
			e := errcode.As(err)
			e.Message = fmt.Sprintf("moving %s (scope %s) to %s: %s", r.Directory, sc, r.RenamedDirectory, e.Message)
			return m, e
		}
		m.Scopes = append(m.Scopes, MovedScope{Scope: sc, Resources: res.Resources, Action: res.Action.String()})
	}
	return m, nil
}

func newStackMove(r *RemovedStack) *StackMove {
	return &StackMove{From: r.Name, To: r.RenamedTo, FromDirectory: r.Directory, ToDirectory: r.RenamedDirectory, Environment: r.Environment, Scopes: []MovedScope{}}
}

// isRenamed reports whether s is the old stack of a move.
func (m *manyRun) isRenamed(s *stackgraph.Stack) bool {
	for _, r := range m.renamed {
		if r.Stack == s {
			return true
		}
	}
	return false
}

// previewMoves records, in a plan, the move of each renamed stack as its
// result: what the review shows in place of a destroy.
func (m *manyRun) previewMoves(ctx context.Context, status map[string]stackrun.Status) {
	for _, r := range m.renamed {
		mv, err := m.mover.preview(ctx, r)
		m.recordMove(r, mv, err)
		status[r.Directory] = m.result(r.Directory).Status
	}
}

// applyMoves moves, in an apply, the state of every stack renamed to s;
// false when a move failed, and s must not run (it would create what the
// old stack still holds).
func (m *manyRun) applyMoves(ctx context.Context, s *stackgraph.Stack) bool {
	for _, r := range m.renamed {
		if r.RenamedTo != s.Name {
			continue
		}
		mv, err := m.mover.apply(ctx, r)
		m.recordMove(r, mv, err)
		if err != nil {
			e := errcode.As(err)
			res := &StackRunResult{Status: stackrun.Failed, ExitCode: int(e.Exit()), Error: errorBody(e)}
			m.mu.Lock()
			m.results[s.Directory] = res
			m.mu.Unlock()
			m.lines.Line("%s: not run: the move of %s's state to it failed: %s", s.Directory, r.Directory, e.Message)
			return false
		}
	}
	return true
}

// recordMove keeps the move of r as its result and says it.
func (m *manyRun) recordMove(r *RemovedStack, mv *StackMove, err error) {
	res := &StackRunResult{Status: stackrun.Succeeded, Moved: mv}
	if err != nil {
		e := errcode.As(err)
		res.Status, res.ExitCode, res.Error = stackrun.Failed, int(e.Exit()), errorBody(e)
		m.lines.Line("%s: the move to %s failed: %s", r.Directory, r.RenamedDirectory, e.Message)
	} else {
		m.lines.Line("%s: %s", r.Directory, mv.Outcome())
	}
	m.mu.Lock()
	m.results[r.Directory] = res
	m.mu.Unlock()
}

func errorBody(e *errcode.Error) *cmdutil.ErrorBody {
	return &cmdutil.ErrorBody{Code: e.Code, Message: e.Message, Hint: e.Hint, Details: e.Details}
}
