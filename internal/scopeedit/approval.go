package scopeedit

import (
	"fmt"

	"github.com/sponson/terraform-provider-sponson/internal/environments"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// Approval is the approval an edit of a scope carries (docs/design.md §2.11
// Approval): in a protected environment the approver the environment's
// declaration allows, elsewhere none. An edit outside a plan (state rm, mv
// and push, resolve, adopt, unlock's record) changes what the environment
// owns as an apply does, so it is approved as an apply is. Only Approve
// makes one, and Edit refuses an edit whose approval was not decided for
// the environment of its scope: a command that forgets to ask cannot edit
// a protected scope by default.
type Approval struct {
	environment string
	by          string
}

// Approve decides the approval of command in env: in a protected
// environment name (--approved-by, or SPONSON_APPROVED_BY) must be one of
// its approvers (environments.Environment.Approve), or the edit is refused
// with ENV_NOT_APPROVED (exit 2) and a hint that says what to pass; in an
// unprotected one no approver is needed and none is recorded.
func Approve(env environments.Environment, command, name string) (Approval, error) {
	a := Approval{environment: environments.Normalize(env.Name)}
	if !env.Protected {
		return a, nil
	}
	by, err := env.Approve(name)
	if err != nil {
		e := errcode.As(err)
		e.Message = command + ": " + e.Message
		if env.Approvers == nil {
			e = e.WithHint(fmt.Sprintf("Pass --approved-by NAME (or set SPONSON_APPROVED_BY): %s changes what the protected environment %s owns outside a plan, and is approved as its apply is.", command, env.Name))
		}
		return Approval{}, e
	}
	a.by = by
	return a, nil
}

// By is the approver the edit's receipt records; "" where none was needed.
func (a Approval) By() string { return a.by }

// decidedFor refuses an approval not decided for env: the zero Approval,
// or one of another environment.
func (a Approval) decidedFor(env string) error {
	if a.environment == "" || a.environment != environments.Normalize(env) {
		return errcode.New(errcode.Internal, "the edit of a scope in environment %s decided no approval for it (scopeedit.Approve)", env)
	}
	return nil
}

// Check refuses, as Edit does, an approval not decided for env: an edit of
// a scope outside Edit (a stack move) asks it before it takes a lease.
func (a Approval) Check(env string) error { return a.decidedFor(env) }
