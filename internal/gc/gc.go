// Package gc decides which scopes of an environment `sponson gc` collects.
// Select is pure selection: the facts (which pull requests are open, which
// branches still exist, the time) are handed to it, and it touches no
// store, git or network. gather.go gathers those facts: the open pull
// requests from the command line (--open-prs) or the GitHub API, and the
// live branches from `git ls-remote --heads`.
// The command destroys what Select returns through the normal destroy path,
// one scope at a time, each under its own lease; outcome.go decides the
// rest: which selected scope it skips, the context of each destroy, what a
// destroy's error makes of the scope, and the code gc fails with.
//
// The rules (each one off unless its facts are known or its option is set):
//
//   - pr-closed: a scope pr-<n> whose pull request n is not open.
//   - branch-gone: a scope branch-<name> that no branch of the remote maps to
//     (runctx.ScopeFor of each remote head).
//   - older-than: a scope whose last run (its latest receipt's finish time,
//     or start time when it never finished) is older than now minus the
//     limit. A scope without a receipt has no last run and is never old.
//
// Whatever the rules say, Select never returns:
//
//   - a scope whose latest receipt says it is destroyed: there is nothing
//     left to destroy, and its receipt is the record that it is gone. A
//     destroy that failed or was interrupted is not "destroyed": the scope
//     still owns what its ledger lists, so it is collected again.
//   - a superseded scope (SupersededBy set): its resources moved to its
//     successor, which owns them now; destroying it would have nothing to do
//     at best.
//   - main, unless Options.IncludeMain; even then only the older-than rule
//     can select it, since it is neither a pull request nor a branch scope.
//
// A selected scope whose lease is live is returned with Busy set: a run is
// working in it right now, so the command skips it and says so (the next gc
// collects it if it still qualifies).
package gc

import (
	"bufio"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Reason is why a scope is collected.
type Reason string

// The reasons, one per rule.
const (
	PRClosed   Reason = "pr-closed"
	BranchGone Reason = "branch-gone"
	OlderThan  Reason = "older-than"
)

// MainScope is the scope of the default branch, which gc keeps unless asked.
const MainScope = "main"

// Facts are what the world says about the scopes. A rule whose facts are
// not known is off: gc collects less rather than guess.
type Facts struct {
	// OpenPRs are the open pull requests; consulted only when PRsKnown.
	OpenPRs  map[int]bool
	PRsKnown bool
	// BranchScopes are the scopes of the branches that still exist on the
	// remote (see BranchScopes); consulted only when BranchesKnown.
	BranchScopes  map[string]bool
	BranchesKnown bool
}

// Options are the choices of the user.
type Options struct {
	// OlderThan turns the older-than rule on when positive.
	OlderThan time.Duration
	// IncludeMain lets the older-than rule select main.
	IncludeMain bool
}

// Cutoff is the time before which a scope's last run is too old: the
// older-than rule's line, meaningful only when OlderThan is positive.
func (o Options) Cutoff(now time.Time) time.Time { return now.Add(-o.OlderThan) }

// MainIgnored reports whether IncludeMain asks for what cannot happen: only
// the older-than rule can select main, which is neither a pull request's
// scope nor a branch's.
func (o Options) MainIgnored() bool { return o.IncludeMain && o.OlderThan <= 0 }

// Candidate is a scope Select collects.
type Candidate struct {
	Stack   string   `json:"stack"`
	Scope   string   `json:"scope"`
	Reasons []Reason `json:"reasons"`
	// LastRun is when the scope last ran; zero without a receipt.
	LastRun time.Time `json:"lastRun,omitzero"`
	// Busy is the live lease of a scope a run is working in: it is skipped.
	Busy *store.LeaseInfo `json:"busy,omitempty"`
	// Latest is the scope's latest receipt, nil if it has none.
	Latest *receipt.Receipt `json:"-"`
}

// Destroy reports whether the candidate is to be destroyed (not busy).
func (c Candidate) Destroy() bool { return c.Busy == nil }

// Select returns the scopes to collect, sorted by name.
func Select(scopes []store.ScopeSummary, facts Facts, now time.Time, opts Options) []Candidate {
	out := []Candidate{}
	cutoff := opts.Cutoff(now)
	for _, s := range scopes {
		name := s.Key.Scope
		r := s.Latest
		// A superseded scope whose ledger is empty handed everything to its
		// successor; one applied again since then owns new resources (its
		// receipts keep supersededBy) and is collected like any other.
		if Gone(r) || (r != nil && r.SupersededBy != "" && len(r.Ledger) == 0) {
			continue
		}
		if name == MainScope && !opts.IncludeMain {
			continue
		}
		var reasons []Reason
		if n, ok := PRNumber(name); ok && facts.PRsKnown && !facts.OpenPRs[n] {
			reasons = append(reasons, PRClosed)
		}
		if strings.HasPrefix(name, "branch-") && facts.BranchesKnown && !facts.BranchScopes[name] {
			reasons = append(reasons, BranchGone)
		}
		last := LastRun(r)
		if opts.OlderThan > 0 && !last.IsZero() && last.Before(cutoff) {
			reasons = append(reasons, OlderThan)
		}
		if len(reasons) == 0 {
			continue
		}
		c := Candidate{Stack: s.Key.Stack, Scope: name, Reasons: reasons, LastRun: last, Latest: r}
		if s.Lease.Live(now) {
			l := s.Lease
			c.Busy = &l
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Stack != out[j].Stack {
			return out[i].Stack < out[j].Stack
		}
		return out[i].Scope < out[j].Scope
	})
	return out
}

// Gone reports whether a receipt records its scope as destroyed.
func Gone(r *receipt.Receipt) bool {
	return r != nil && r.Status == receipt.StatusDestroyed
}

// LastRun is when the receipt's run finished, or started if it never
// finished; zero for no receipt.
func LastRun(r *receipt.Receipt) time.Time {
	if r == nil {
		return time.Time{}
	}
	if !r.FinishedAt.IsZero() {
		return r.FinishedAt
	}
	return r.StartedAt
}

// PRNumber returns n for a scope named exactly as runctx.ScopeFor names the
// scope of pull request n ("pr-12", not "pr-012" or "pr-x").
func PRNumber(scope string) (int, bool) {
	rest, ok := strings.CutPrefix(scope, "pr-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n <= 0 || runctx.ScopeFor("", n, "") != scope {
		return 0, false
	}
	return n, true
}

// BranchScopes maps branch names to the scopes runs on them get, as
// runctx.ScopeFor derives them: a scope branch-<x> whose branch still exists
// is in the set even though its name was sanitized.
func BranchScopes(branches []string) map[string]bool {
	out := make(map[string]bool, len(branches))
	for _, b := range branches {
		out[runctx.ScopeFor(b, 0, "")] = true
		// Where the default branch is another, main and master have scopes
		// of their own (runctx.ScopeFor): keep those too.
		out[runctx.BranchScope(b)] = true
		// And the name the branch's scope had before scopes of lossy or
		// long branch names got a hash: a live branch's scope is never
		// collected because sponson was upgraded.
		out[runctx.LegacyBranchScope(b)] = true
	}
	return out
}

// ParseHeads reads the output of `git ls-remote --heads REMOTE`
// ("<sha>\trefs/heads/<branch>" per line) and returns the branch names.
func ParseHeads(out string) []string {
	var heads []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		_, ref, ok := strings.Cut(strings.TrimSpace(sc.Text()), "\t")
		if !ok {
			continue
		}
		if b, ok := strings.CutPrefix(strings.TrimSpace(ref), "refs/heads/"); ok && b != "" {
			heads = append(heads, b)
		}
	}
	return heads
}

// NoOpenPRs is the value that says explicitly that no pull request is open.
// An empty list is refused instead: in a script an empty value is far more
// often a failed lookup than a repository without open pull requests, and
// reading it as "none open" would collect every pull request scope.
const NoOpenPRs = "none"

// ParsePRList reads --open-prs: numbers separated by commas or spaces
// ("12,15", "12 15"), or NoOpenPRs.
func ParsePRList(s string) ([]int, error) {
	if strings.TrimSpace(s) == NoOpenPRs {
		return []int{}, nil
	}
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
	if len(fields) == 0 {
		return nil, fmt.Errorf("lists no pull request; write %q when none is open", NoOpenPRs)
	}
	out := make([]int, 0, len(fields))
	for _, f := range fields {
		n, err := parsePR(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// ParsePRFile reads --open-prs-file: one pull request number per line;
// blank lines and lines starting with "#" are ignored, and a line
// holding only NoOpenPRs says none is open. A file without any number is
// refused, as ParsePRList refuses an empty list.
func ParsePRFile(data []byte) ([]int, error) {
	out := []int{}
	none := false
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		switch {
		case s == "" || strings.HasPrefix(s, "#"):
			continue
		case s == NoOpenPRs:
			none = true
			continue
		}
		n, err := parsePR(s)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, n)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) > 0 && none {
		return nil, fmt.Errorf("says %q and lists pull requests", NoOpenPRs)
	}
	if len(out) == 0 && !none {
		return nil, fmt.Errorf("lists no pull request; write %q on a line when none is open", NoOpenPRs)
	}
	return out, nil
}

func parsePR(s string) (int, error) {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not a pull request number", s)
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a pull request number", s)
	}
	return n, nil
}

// Set turns a list of pull request numbers into the set Facts holds.
func Set(prs []int) map[int]bool {
	out := make(map[int]bool, len(prs))
	for _, n := range prs {
		out[n] = true
	}
	return out
}
