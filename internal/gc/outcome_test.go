package gc_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/gc"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

func TestDestroyContext(t *testing.T) {
	t.Parallel()
	base := runctx.Context{Environment: "preview", Scope: "gc", Branch: "main", PullRequest: 99, Commit: "abc1234def", Predecessor: "branch-x", Source: runctx.SourceGitHub}
	for _, tc := range []struct {
		c    gc.Candidate
		want string
	}{
		{gc.Candidate{Scope: "pr-7", Latest: &receipt.Receipt{Branch: "feat/x", PullRequest: 7}}, "pr-7 feat/x #7"},
		{gc.Candidate{Scope: "pr-8"}, "pr-8  #8"},
		{gc.Candidate{Scope: "branch-feat-x", Latest: &receipt.Receipt{Branch: "feat/x"}}, "branch-feat-x feat/x #0"},
		{gc.Candidate{Scope: "stale", Latest: &receipt.Receipt{}}, "stale  #0"},
	} {
		c := gc.DestroyContext(base, tc.c)
		got := fmt.Sprintf("%s %s #%d", c.Scope, c.Branch, c.PullRequest)
		if got != tc.want || c.Environment != "preview" || c.Commit != "abc1234def" || c.Predecessor != "" {
			t.Errorf("DestroyContext(%s) = %+v, want %s", tc.c.Scope, c, tc.want)
		}
	}
}

func TestSkip(t *testing.T) {
	t.Parallel()
	busy := &store.LeaseInfo{Holder: "run-x"}
	for _, tc := range []struct {
		c        gc.Candidate
		ownStack string
		want     string
	}{
		{gc.Candidate{Stack: "a", Scope: "pr-1"}, "a", ""},
		{gc.Candidate{Stack: "a", Scope: "pr-1"}, "", ""},
		{gc.Candidate{Stack: "b", Scope: "pr-1"}, "a", gc.SkipOtherStack},
		{gc.Candidate{Stack: "b", Scope: "pr-1", Busy: busy}, "", gc.SkipBusy},
		{gc.Candidate{Stack: "a", Scope: "pr-1", Busy: busy}, "a", gc.SkipBusy},
	} {
		if got := gc.Skip(tc.c, tc.ownStack); got != tc.want {
			t.Errorf("Skip(%+v, %q) = %q, want %q", tc.c, tc.ownStack, got, tc.want)
		}
	}
}

func TestOutcome(t *testing.T) {
	t.Parallel()
	until := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	if o, skip, h := gc.Outcome(nil); o != gc.Destroyed || skip != "" || h != nil {
		t.Errorf("Outcome(nil) = %s %q %v", o, skip, h)
	}
	held := errcode.New(errcode.LockHeld, "held").With("holder", "run-x").With("expiresAt", until)
	if o, skip, h := gc.Outcome(fmt.Errorf("destroy: %w", held)); o != gc.Skipped || skip != gc.SkipBusy || h == nil || h.Holder != "run-x" || !h.ExpiresAt.Equal(until) {
		t.Errorf("Outcome(LOCK_HELD) = %s %q %+v", o, skip, h)
	}
	if o, _, _ := gc.Outcome(errcode.New(errcode.EngineFailed, "boom")); o != gc.Failed {
		t.Errorf("Outcome(ENGINE_FAILED) = %s", o)
	}
}

func TestFailureCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		codes []errcode.Code
		want  errcode.Code
	}{
		{nil, ""},
		{[]errcode.Code{errcode.Usage, errcode.EngineFailed}, errcode.EngineFailed},
		{[]errcode.Code{errcode.EngineFailed, errcode.LockLost}, errcode.EngineFailed},
		{[]errcode.Code{errcode.Usage, errcode.LockHeld}, errcode.Usage},
		{[]errcode.Code{errcode.Usage, errcode.OwnedByOtherScope}, errcode.OwnedByOtherScope},
	} {
		if got := gc.FailureCode(tc.codes); got != tc.want {
			t.Errorf("FailureCode(%v) = %q, want %q", tc.codes, got, tc.want)
		}
	}
}

func TestParseAge(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, " 720h ": 720 * time.Hour, "90m": 90 * time.Minute} {
		if got, err := gc.ParseAge(in); err != nil || got != want {
			t.Errorf("ParseAge(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0d", "-1h", "0", "xd", "1000000d", "soon"} {
		if _, err := gc.ParseAge(in); err == nil {
			t.Errorf("ParseAge(%q) accepted", in)
		}
	}
	if gc.Age(30*24*time.Hour) != "30d" || gc.Age(90*time.Minute) != "1h30m0s" {
		t.Errorf("Age: %s, %s", gc.Age(30*24*time.Hour), gc.Age(90*time.Minute))
	}
}
