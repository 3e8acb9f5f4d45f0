package gc

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// What becomes of a selected scope: the command destroys it, one scope at a
// time, through the normal destroy path, unless it skips it (Skip); a
// destroy's error decides its outcome (Outcome), and the failures decide
// gc's own error code (FailureCode).

// Outcomes of a selected scope.
const (
	WouldDestroy = "would-destroy" // dry run
	Destroyed    = "destroyed"
	Failed       = "failed"
	Skipped      = "skipped"       // SkipBusy or SkipOtherStack
	NotAttempted = "not-attempted" // gc was interrupted first
)

// Why a selected scope is skipped.
const (
	// SkipBusy: a run holds the scope's lease; the next gc collects it if
	// it still qualifies.
	SkipBusy = "busy"
	// SkipOtherStack: the scope is of another root module, which only a
	// gc in that configuration can destroy.
	SkipOtherStack = "other-stack"
)

// Skip says why gc leaves a selected scope alone when its destroys run in
// ownStack ("" in a dry run, which destroys nothing): SkipOtherStack,
// SkipBusy, or "" when it destroys it.
func Skip(c Candidate, ownStack string) string {
	switch {
	case ownStack != "" && c.Stack != ownStack:
		return SkipOtherStack
	case c.Busy != nil:
		return SkipBusy
	}
	return ""
}

// Outcome is what a destroy's error makes of the scope: Destroyed without
// one; Skipped as busy (SkipBusy) when a run took the lease since the
// listing (LOCK_HELD: nothing was written), with the holder the refusal
// names; Failed otherwise.
func Outcome(err error) (outcome, skip string, holder *store.LeaseInfo) {
	switch {
	case err == nil:
		return Destroyed, "", nil
	case errcode.Is(err, errcode.LockHeld):
		e := errcode.As(err)
		if h, ok := e.Details["holder"].(string); ok {
			holder = &store.LeaseInfo{Holder: h}
			holder.ExpiresAt, _ = e.Details["expiresAt"].(time.Time)
		}
		return Skipped, SkipBusy, holder
	}
	return Failed, "", nil
}

// FailureCode is the code gc fails with when destroys failed with codes,
// in order: the first whose exit code is 1 (a destroy that failed), the
// first one's otherwise (all refused).
func FailureCode(codes []errcode.Code) errcode.Code {
	var code errcode.Code
	for _, c := range codes {
		if code == "" || (errcode.Lookup(code).Exit != errcode.ExitFailed && errcode.Lookup(c).Exit == errcode.ExitFailed) {
			code = c
		}
	}
	return code
}

// DestroyContext is the context of gc's destroy of c: the scope gc
// selected, with the branch and pull request its latest receipt recorded
// (never those of the job running gc), the commit of the configuration
// that destroys it (base), and no predecessor, so that a destroy inherits
// nothing.
func DestroyContext(base runctx.Context, c Candidate) runctx.Context {
	ctx := runctx.Context{
		Stack:         base.Stack,
		Environment:   base.Environment,
		Scope:         c.Scope,
		Commit:        base.Commit,
		DefaultBranch: base.DefaultBranch,
		Source:        runctx.SourceFlags,
	}
	if r := c.Latest; r != nil {
		ctx.Branch, ctx.PullRequest = r.Branch, r.PullRequest
	}
	if n, ok := PRNumber(c.Scope); ok {
		ctx.PullRequest = n
	}
	return ctx
}

// ParseAge reads the limit of the older-than rule: a Go duration (720h) or
// whole days (30d), positive.
func ParseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n > 100000 {
			return 0, fmt.Errorf("%q is not a number of days", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%q is not a duration like 720h or 30d", s)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration", s)
	}
	return d, nil
}

// Age shows a limit in whole days when it is one (30d), else as Go does.
func Age(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}
