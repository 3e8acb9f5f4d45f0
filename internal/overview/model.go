// Package overview is the picture of a whole store that `sponson status
// --html` draws and `status --json` carries (docs/design.md §4.8 "The
// overview"): every environment, stack and scope, with owner, age, last
// run, lease, what each owns, drift where a drift result is given, what gc
// would collect and why (gc.Select, read-only), the stacks' dependency
// graph and each scope's receipts in time order.
//
// Build is pure reading: it lists what `sponson status` lists (leases and
// receipts) and nothing else, never a state, a record's content beyond the
// ledger base and journal that store.ListScopes joins, or a secret; Render
// turns the model into one self-contained HTML page.
//
// What the page shows and where it comes from:
//
//   - each environment's leases and latest receipts (store.ListScopes); a
//     scope's earlier receipts (HistoryReader, which every backend is; a
//     store that is not one shows the latest alone, said on the page),
//     read again by serve only when the scope's last run changed
//     (Timelines); the declared environments; the repository's stacks for the
//     order and the graph. status --json carries one environment, and
//     status --stack and --state filter the table.
//   - links: owners and commits link to the repository when the CI's
//     variables or a lease's job URL name it; a run links to the CI job its
//     receipt records (receipt.JobURL), a live lease to its holder's job.
//   - what gc would collect: gc.Select over the same listing with the facts
//     given (--open-prs, --older-than); a rule without its facts is off and
//     the page says so. The remote's branches are not read: the page makes
//     no network call.
//   - drift, only where a drift result is given (--drift FILE, the output of
//     `sponson drift --json`).
//   - a stack of the store that no directory of the discovered repository
//     has is marked gone (not when discovery found no stack: the page may be
//     drawn from outside the repository); destroyed scopes are folded into a
//     count under their stack, listed on request.
//
// The page is self-contained (inline CSS, script and SVG) under a
// Content-Security-Policy that loads nothing from elsewhere, every value
// escaped by html/template. Handler (`sponson serve`) builds it anew per
// request; the page polls JSONPath and redraws itself without a reload,
// keeping its filters.
package overview

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/gc"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/stackgraph"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/summary"
)

// The states a scope can be filtered by; a scope has any number of them.
const (
	StateRunning     = "running"     // a live lease: a run is working in it
	StateStaleLease  = "stale-lease" // a lease that expired unreleased: its run died
	StateDrifted     = "drifted"     // the drift result given says so
	StateCollectable = "collectable" // gc would destroy it (gc.Select)
	StateDestroyed   = "destroyed"   // its latest receipt records it destroyed
	StateFailed      = "failed"      // its last run failed
)

// States lists the states in the order the page offers them.
var States = []string{StateRunning, StateStaleLease, StateDrifted, StateCollectable, StateFailed, StateDestroyed}

// Reader is what Build needs of a store: the listing status reads.
type Reader interface {
	store.Lister
}

// HistoryReader is a store that lists every receipt it kept of a scope
// (store.History: each of the file, git, PostgreSQL, S3, GCS and Azure
// stores); with a Reader without it a scope's timeline is its latest
// receipt, marked Partial.
type HistoryReader = store.History

// EnvironmentLister is a store that can name the environments it holds.
type EnvironmentLister interface {
	Environments(ctx context.Context) ([]string, error)
}

// Input is what Build reads and is told.
type Input struct {
	Store    Reader
	StoreURL string
	// Environments are the declared environments; those the store holds
	// (EnvironmentLister) are added. Only, when not empty, keeps these.
	Environments []string
	Only         []string
	// Stacks is the repository's stack set, nil when not discovered
	// (StacksNote says why): without it the graph is not drawn and no
	// stack is known to be gone.
	Stacks     *stackgraph.Set
	StacksNote string
	// GC are the facts and options gc decides on; a rule whose facts are
	// unknown is off, as in `sponson gc`.
	GC        gc.Facts
	GCOptions gc.Options
	// Drift is a drift result per scope, keyed by DriftKey (a key of no
	// stack matches the scope in any stack); nil when none was given
	// (drift writes nothing to the store; ParseDrift reads its --json).
	Drift map[string]summary.DriftScope
	// Host links owners and runs: the repository's web address.
	Host Host
	Now  time.Time
	// Timelines, when not nil, keeps the scopes' timelines between
	// builds (serve's).
	Timelines *Timelines
}

// DriftKey keys Input.Drift.
func DriftKey(env, stack, scope string) string { return env + "\x00" + stack + "\x00" + scope }

// Host is where the repository lives on the web, for links; zero for
// none known.
type Host struct {
	// Kind is "github" or "gitlab".
	Kind string `json:"kind,omitempty"`
	// Repo is the repository's web address (https://github.com/OWNER/NAME).
	Repo string `json:"repo,omitempty"`
}

// HostFromEnv reads the repository's address from the CI's variables
// (GitHub Actions, GitLab CI); zero outside CI.
func HostFromEnv(getenv func(string) string) Host {
	if repo := getenv("GITHUB_REPOSITORY"); repo != "" {
		server := strings.TrimRight(getenv("GITHUB_SERVER_URL"), "/")
		if server == "" {
			server = "https://github.com"
		}
		return Host{Kind: "github", Repo: server + "/" + repo}
	}
	if p := getenv("CI_PROJECT_URL"); p != "" {
		return Host{Kind: "gitlab", Repo: strings.TrimRight(p, "/")}
	}
	return Host{}
}

// hostFromJob reads the repository's address from a CI job's URL a lease
// recorded (runctx.DetectJob's forms).
func hostFromJob(job string) Host {
	u, err := url.Parse(job)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return Host{}
	}
	if i := strings.Index(job, "/actions/runs/"); i > 0 {
		return Host{Kind: "github", Repo: job[:i]}
	}
	if i := strings.Index(job, "/-/jobs/"); i > 0 {
		return Host{Kind: "gitlab", Repo: job[:i]}
	}
	return Host{}
}

// Model is the overview: pure data, what the page shows and --json carries.
type Model struct {
	GeneratedAt  time.Time `json:"generatedAt"`
	Store        string    `json:"store"`
	Environments []string  `json:"environments"`
	// Stacks are in dependency order: the discovered stacks by depth, then
	// the store's stacks no directory has, by name.
	Stacks     []Stack  `json:"stacks"`
	StacksNote string   `json:"stacksNote,omitempty"`
	Scopes     []Scope  `json:"scopes"`
	Counts     Counts   `json:"counts"`
	GC         GCFacts  `json:"gc"`
	Drift      bool     `json:"driftGiven"`
	Host       Host     `json:"host,omitzero"`
	States     []string `json:"states"`
}

// Counts are the model's totals.
type Counts struct {
	Scopes      int `json:"scopes"`
	Running     int `json:"running"`
	StaleLease  int `json:"staleLease"`
	Drifted     int `json:"drifted"`
	Collectable int `json:"collectable"`
	Destroyed   int `json:"destroyed"`
	Owned       int `json:"owned"`
}

// GCFacts say which gc rules the collectable column applied.
type GCFacts struct {
	Rules []string `json:"rules"`
	Off   []string `json:"off,omitempty"`
}

// Stack is one stack of the graph or of the store.
type Stack struct {
	Name      string   `json:"stack"`
	Directory string   `json:"directory,omitempty"`
	Depth     int      `json:"depth"`
	Needs     []string `json:"needs"` // stack names
	// Gone: the store has scopes of it, and the repository, whose stacks
	// were discovered (at least one), no directory.
	Gone   bool `json:"gone,omitempty"`
	Scopes int  `json:"scopes"`
}

// Scope is one scope of one stack of one environment.
type Scope struct {
	Environment string `json:"environment"`
	Stack       string `json:"stack"`
	Scope       string `json:"scope"`
	Owner       Owner  `json:"owner"`
	// LastActive is when the scope last ran (gc.LastRun), or its lease was
	// taken when it has no receipt; Age is Now less it, in seconds.
	LastActive time.Time `json:"lastActive,omitzero"`
	Age        int64     `json:"ageSeconds"`
	LastRun    *Run      `json:"lastRun,omitempty"`
	Lease      *Lease    `json:"lease,omitempty"`
	Owns       int       `json:"owns"`
	States     []string  `json:"states"`
	Drift      *Drift    `json:"drift,omitempty"`
	Collect    *Collect  `json:"collect,omitempty"`
	// SupersededBy and InheritedFrom are the scope's succession.
	SupersededBy  string   `json:"supersededBy,omitempty"`
	InheritedFrom string   `json:"inheritedFrom,omitempty"`
	Unresolved    []string `json:"unresolved,omitempty"`
	// Timeline are the scope's receipts, oldest first; Partial says the
	// store lists none but the latest (not a HistoryReader).
	Timeline []Run `json:"timeline"`
	Partial  bool  `json:"timelinePartial,omitempty"`
}

// Owner is whose a scope is: a pull request, a branch, or neither.
type Owner struct {
	Kind  string `json:"kind,omitempty"` // "pull-request", "branch"
	Label string `json:"label"`
	URL   string `json:"url,omitempty"`
}

// Run is one receipt, in a line.
type Run struct {
	RunID       string    `json:"runId"`
	Command     string    `json:"command"`
	Status      string    `json:"status"`
	StartedAt   time.Time `json:"startedAt"`
	FinishedAt  time.Time `json:"finishedAt,omitzero"`
	Actor       string    `json:"actor,omitempty"`
	JobURL      string    `json:"jobUrl,omitempty"`
	ApprovedBy  string    `json:"approvedBy,omitempty"`
	Commit      string    `json:"commit,omitempty"`
	CommitURL   string    `json:"commitUrl,omitempty"`
	Changes     int       `json:"changes"`
	Owns        int       `json:"owns"`
	Error       string    `json:"error,omitempty"`
	Branch      string    `json:"branch,omitempty"`
	PullRequest int       `json:"pullRequest,omitempty"`
}

// Lease is a scope's lease while held, or expired unreleased.
type Lease struct {
	Holder  string    `json:"holder"`
	Since   time.Time `json:"since"`
	Until   time.Time `json:"until"`
	Expired bool      `json:"expired,omitempty"`
	JobURL  string    `json:"jobUrl,omitempty"`
	Actor   string    `json:"actor,omitempty"`
	Host    string    `json:"host,omitempty"`
}

// Drift is what the drift result given says of the scope.
type Drift struct {
	Status  string `json:"status"`
	Changes int    `json:"changes"`
	RunID   string `json:"runId,omitempty"`
}

// Collect is why gc would collect the scope.
type Collect struct {
	Reasons []string `json:"reasons"`
	// Busy: a run holds the lease, so gc skips it this time.
	Busy bool `json:"busy,omitempty"`
}

// Build reads the store and returns the model.
func Build(ctx context.Context, in Input) (*Model, error) {
	now := in.Now
	if now.IsZero() {
		now = time.Now()
	}
	m := &Model{GeneratedAt: now.UTC(), Store: in.StoreURL, Scopes: []Scope{}, Stacks: []Stack{}, StacksNote: in.StacksNote,
		Drift: in.Drift != nil, Host: in.Host, States: States}
	envs := slices.Clone(in.Environments)
	if el, ok := in.Store.(EnvironmentLister); ok {
		held, err := el.Environments(ctx)
		if err != nil {
			return nil, err
		}
		envs = append(envs, held...)
	}
	sort.Strings(envs)
	envs = slices.Compact(envs)
	if len(in.Only) > 0 {
		envs = slices.DeleteFunc(envs, func(e string) bool { return !slices.Contains(in.Only, e) })
	}
	m.Environments = envs
	m.GC = gcFacts(in.GC, in.GCOptions)
	host := in.Host
	for _, env := range envs {
		scopes, h, err := buildEnv(ctx, in, env, now)
		if err != nil {
			return nil, err
		}
		if host == (Host{}) {
			host = h
		}
		m.Scopes = append(m.Scopes, scopes...)
	}
	m.Host = host
	m.link()
	m.Stacks = stacksOf(in.Stacks, m.Scopes)
	order := map[string]int{}
	for i, st := range m.Stacks {
		order[st.Name] = i
	}
	sort.SliceStable(m.Scopes, func(i, j int) bool {
		a, b := m.Scopes[i], m.Scopes[j]
		if a.Environment != b.Environment {
			return a.Environment < b.Environment
		}
		if order[a.Stack] != order[b.Stack] {
			return order[a.Stack] < order[b.Stack]
		}
		return a.Scope < b.Scope
	})
	m.Recount()
	return m, nil
}

// Recount sets the counts from the scopes (after a filter).
func (m *Model) Recount() {
	m.Counts = Counts{}
	for _, s := range m.Scopes {
		m.Counts.Scopes++
		m.Counts.Owned += s.Owns
		for _, st := range s.States {
			switch st {
			case StateRunning:
				m.Counts.Running++
			case StateStaleLease:
				m.Counts.StaleLease++
			case StateDrifted:
				m.Counts.Drifted++
			case StateCollectable:
				m.Counts.Collectable++
			case StateDestroyed:
				m.Counts.Destroyed++
			}
		}
	}
}

// buildEnv reads one environment's scopes; h is the repository's address
// as a lease's job URL names it, zero when none does.
func buildEnv(ctx context.Context, in Input, env string, now time.Time) (out []Scope, h Host, err error) {
	scopes, err := store.ListScopes(ctx, in.Store, env, "")
	if err != nil {
		return nil, h, err
	}
	for _, s := range scopes {
		if h = hostFromJob(s.Lease.About.JobURL); h != (Host{}) {
			break
		}
	}
	collect := map[store.Key]gc.Candidate{}
	for _, c := range gc.Select(scopes, in.GC, now, in.GCOptions) {
		collect[store.Key{Stack: c.Stack, Environment: env, Scope: c.Scope}] = c
	}
	hr, hasHistory := in.Store.(HistoryReader)
	for _, s := range scopes {
		sc := scopeOf(s, now)
		if c, ok := collect[s.Key]; ok {
			sc.Collect = &Collect{Busy: c.Busy != nil}
			for _, r := range c.Reasons {
				sc.Collect.Reasons = append(sc.Collect.Reasons, string(r))
			}
			sc.States = append(sc.States, StateCollectable)
		}
		d, ok := in.Drift[DriftKey(env, s.Key.Stack, s.Key.Scope)]
		if !ok {
			d, ok = in.Drift[DriftKey(env, "", s.Key.Scope)] // a result of one stack (ParseDrift)
		}
		if ok {
			sc.Drift = &Drift{Status: d.Status, Changes: len(d.Changes), RunID: d.RunID}
			if d.Status == summary.Drifted {
				sc.States = append(sc.States, StateDrifted)
			}
		}
		sc.Timeline = []Run{}
		if hasHistory {
			if sc.Timeline, err = in.Timelines.timeline(ctx, hr, s.Key, sc.LastRun); err != nil {
				return nil, h, err
			}
		}
		if len(sc.Timeline) == 0 && sc.LastRun != nil {
			sc.Timeline = []Run{*sc.LastRun}
		}
		sc.Partial = !hasHistory && sc.LastRun != nil
		sort.Strings(sc.States)
		out = append(out, sc)
	}
	return out, h, nil
}

func gcFacts(f gc.Facts, o gc.Options) GCFacts {
	g := GCFacts{Rules: []string{}}
	if f.PRsKnown {
		g.Rules = append(g.Rules, string(gc.PRClosed))
	} else {
		g.Off = append(g.Off, string(gc.PRClosed)+": the open pull requests are not known (status --open-prs)")
	}
	if f.BranchesKnown {
		g.Rules = append(g.Rules, string(gc.BranchGone))
	} else {
		g.Off = append(g.Off, string(gc.BranchGone)+": the remote's branches are not read (no network)")
	}
	if o.OlderThan > 0 {
		g.Rules = append(g.Rules, fmt.Sprintf("%s %s", gc.OlderThan, gc.Age(o.OlderThan)))
	} else {
		g.Off = append(g.Off, string(gc.OlderThan)+": no limit given (status --older-than)")
	}
	return g
}

func scopeOf(s store.ScopeSummary, now time.Time) Scope {
	sc := Scope{Environment: s.Key.Environment, Stack: s.Key.Stack, Scope: s.Key.Scope, States: []string{}}
	r := s.Latest
	if l := s.Lease; l.Holder != "" {
		sc.Lease = &Lease{Holder: l.Holder, Since: l.AcquiredAt, Until: l.ExpiresAt, Expired: !l.Live(now),
			JobURL: l.About.JobURL, Actor: l.About.Actor, Host: l.About.Host}
		if l.Live(now) {
			sc.States = append(sc.States, StateRunning)
		} else {
			sc.States = append(sc.States, StateStaleLease)
		}
	}
	sc.LastActive = gc.LastRun(r)
	if sc.LastActive.IsZero() && s.Lease.Holder != "" {
		sc.LastActive = s.Lease.AcquiredAt
	}
	if !sc.LastActive.IsZero() {
		sc.Age = int64(now.Sub(sc.LastActive) / time.Second)
	}
	if r != nil {
		run := runOf(r)
		sc.LastRun = &run
		sc.Owns = len(r.Ledger)
		sc.SupersededBy, sc.InheritedFrom = r.SupersededBy, r.InheritedFrom
		for _, e := range r.Ledger {
			if e.CreatedBy == receipt.CreatedByUnresolved {
				sc.Unresolved = append(sc.Unresolved, e.Described())
			}
		}
		if gc.Gone(r) {
			sc.States = append(sc.States, StateDestroyed)
		}
		if r.Status == receipt.StatusFailed {
			sc.States = append(sc.States, StateFailed)
		}
	}
	sc.Owner = ownerOf(s.Key.Scope, r)
	return sc
}

func runOf(r *receipt.Receipt) Run {
	run := Run{RunID: r.RunID, Command: r.Command, Status: r.Status, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
		Actor: r.Actor, JobURL: r.JobURL, ApprovedBy: r.ApprovedBy, Commit: r.Commit, Changes: len(r.Changes), Owns: len(r.Ledger),
		Branch: r.Branch, PullRequest: r.PullRequest}
	if r.Error != nil {
		run.Error = r.Error.Code
	}
	return run
}

func ownerOf(scope string, r *receipt.Receipt) Owner {
	switch {
	case r != nil && r.PullRequest > 0:
		return Owner{Kind: "pull-request", Label: fmt.Sprintf("#%d", r.PullRequest)}
	case r != nil && r.Branch != "":
		return Owner{Kind: "branch", Label: r.Branch}
	}
	if n, ok := gc.PRNumber(scope); ok {
		return Owner{Kind: "pull-request", Label: fmt.Sprintf("#%d", n)}
	}
	return Owner{Label: "-"}
}

// link fills the owners' and commits' web addresses where the host is
// known.
func (m *Model) link() {
	if m.Host.Repo == "" {
		return
	}
	base := m.Host.Repo
	mr, tree, commit := "/pull/", "/tree/", "/commit/"
	if m.Host.Kind == "gitlab" {
		mr, tree, commit = "/-/merge_requests/", "/-/tree/", "/-/commit/"
	}
	commitURL := func(c string) string {
		if c == "" {
			return ""
		}
		return base + commit + url.PathEscape(c)
	}
	for i := range m.Scopes {
		s := &m.Scopes[i]
		switch s.Owner.Kind {
		case "pull-request":
			s.Owner.URL = base + mr + strings.TrimPrefix(s.Owner.Label, "#")
		case "branch":
			s.Owner.URL = base + tree + url.PathEscape(s.Owner.Label)
		}
		if s.LastRun != nil {
			s.LastRun.CommitURL = commitURL(s.LastRun.Commit)
		}
		for j := range s.Timeline {
			s.Timeline[j].CommitURL = commitURL(s.Timeline[j].Commit)
		}
	}
}

// stacksOf lists the discovered stacks in their order, then those of the
// store that no directory has (gone when the set was discovered).
func stacksOf(set *stackgraph.Set, scopes []Scope) []Stack {
	count := map[string]int{}
	for _, s := range scopes {
		count[s.Stack]++
	}
	out := []Stack{}
	known := map[string]bool{}
	if set != nil {
		nameOf := map[string]string{}
		for _, st := range set.Stacks {
			nameOf[st.Directory] = st.Name
		}
		for _, st := range set.Stacks {
			needs := []string{}
			for _, d := range st.Needs {
				if n, ok := nameOf[d]; ok {
					needs = append(needs, n)
				}
			}
			out = append(out, Stack{Name: st.Name, Directory: st.Directory, Depth: st.Depth, Needs: needs, Scopes: count[st.Name]})
			known[st.Name] = true
		}
	}
	var rest []string
	for name := range count {
		if !known[name] {
			rest = append(rest, name)
		}
	}
	sort.Strings(rest)
	for _, name := range rest {
		out = append(out, Stack{Name: name, Needs: []string{}, Gone: set != nil && len(set.Stacks) > 0, Scopes: count[name]})
	}
	return out
}
