// Package scoperun runs the engine in one scope: it takes the scope's lease,
// serves the scope's state through the fenced state server, drives
// init/plan/apply through terraform-exec, and writes the receipt. It is what
// `sponson plan`, `apply` and `destroy` do once the command line has been
// read (docs/design.md §3.2 "An apply, end to end").
//
// A run is a list of phases, one file each, read in this order: run.go (the
// list), prepare.go, acquire.go, load.go, serve.go, settle.go, reindex.go,
// check.go, policy.go, commit.go, apply.go, record.go, finish.go and
// release.go;
// unchanged.go is where an apply whose plan changes nothing ends instead of
// commit.go, and saved.go where a plan ends. Each phase takes what the ones
// before produced and returns what it makes, as values: prepare the
// workdir, load what it loaded (the receipt carried forward, the handover,
// what --allow-older-commit records, what a plan saw), serve the engineRun,
// settle what it settled (and the receipt carried forward from then on),
// check the checked plan, commit the checkpoint's receipt. What every phase
// shares (the options, the result, the scope key, the start, the held lease,
// the releases) and what the run's goroutines write while the engine runs
// is the runner's. The helpers several phases use live in files named for
// what they are: leases.go, ledger.go, receipts.go, plan.go, tfstate.go,
// succession.go.
//
// What the phases do beyond their names (docs/design.md §3.2 lists them): a
// configuration with its own backend gets a workspace of that backend per
// scope (Workspace) and its state writes are not fenced, with a warning; a
// plan takes no lease and only says when an apply of the scope is running
// (seeRunning); a successor's destroy of a copy not yet promised ends in
// load (succession.Handover.UnpromisedCopy); release undoes what each phase
// registered as it took it (onRelease: parent leases, backend override,
// state server, the engine's context, the predecessor's lease, the scope
// lease, the temporary directory), in reverse order; the scope lease's
// release is retried (lease.Held.Release), with a warning when it keeps
// failing.
//
// The journal (checkpoint.go; docs/design.md §2.4 "Intent"). During the
// apply every completion the engine reports (a create with its new id, an
// update, a delete, a data source read, a provisioner's start) is written,
// fenced, to the checkpoint's journal (store.JournalRecord). One write is in
// flight at a time, with a rest after each (200 ms, or eight times the write
// it follows: restAfter), so that writes on a slow store take at most a
// ninth of an apply. A completion that finds the writer idle waits the
// gather (an eighth of the last write, at most 10 ms) and goes with the
// others of the same read of the engine's output: creates started together
// complete milliseconds apart, and a kill between their writes lost them. A
// completion a planned create waits for is held: the engine's process is
// paused with SIGSTOP (its plugins go on) until a write holding it is in the
// store, and it skips the gather; without /proc nothing is paused. A create
// whose loss would need a person (its object lives outside the state and is
// not rewritten in place) skips the rest. On git a second push cannot be in
// flight before the first lands: the push's compare-and-swap takes one
// expected tip. The settlement (settle.go) carries out the decisions of
// internal/settle (settle.Ground.Settle): restoring a whole object goes
// through the engine (state pull, then state push), so the state server
// fences the write.
//
// The early apply (early.go; docs/design.md §8). An apply with changes starts
// three engine processes (plan, show -json, apply PLAN), so the apply starts
// as soon as the plan is written (engine.Session.StartApply), while the run
// checks the plan and records its intents. The state server holds every
// request (statesrv.Gate) and the engine's output is held
// (engine.PendingApply); an apply locks or reads the state before anything
// else, so the engine waits at its first request. When the checks pass and
// the intents are recorded, the run opens the gate; when the run does not
// apply, release shuts it: the engine's requests get 423, it ends without
// touching the state, and its output is dropped. show -json does not ask
// the state server (checked on both engines). A configuration with its own
// backend, and a saved plan, apply after the checks.
//
// The no-change apply (unchanged.go; docs/design.md §8). When the plan's
// exit code (-detailed-exitcode 0) says nothing changes, the apply skips
// show -json, the checkpoint and the no-op apply: one engine start, one
// receipt write (status unchanged). Only when nothing the full path reads
// from the plan could change that receipt or a check: a new plan, a state
// sponson serves, a previous receipt, no succession under way, nothing
// settled, no approval needed, no other stack's outputs read, no policies
// declared, and a ledger from the state equal to the previous receipt's. A
// plan that saves nothing (no -out, no --json-plan, no review text) ends the
// same way under the same conditions, and a dependent reads the applied
// state the plan would have handed it.
//
// Signals (apply.go; docs/design.md §7.1): a SIGINT or SIGTERM cancels the
// engine session's context, which makes the engine flush its state and exit;
// during an apply every further one is passed on as SIGINT
// (hurryOnSecondSignal), which stops the engine at once, and the run keeps
// an intent for every create the state lacks (keepStale).
//
// A run refuses, before the lease, a configuration that asks OpenTofu to
// encrypt its state (an `encryption` block, or TF_ENCRYPTION:
// refuseEngineEncryption): sponson reads the state it serves, and ciphertext
// would leave the scope owning nothing (docs/design.md §7.3).
//
// The package does not import the provider: the wrapper hands it the
// function that serves the provider to the engine (Options.ServeProvider,
// provider.EngineEnv).
package scoperun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"sync"
	"sync/atomic"
	"time"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/ancestry"
	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/policy"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/savedplan"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Command is what a run does.
type Command string

// The commands.
const (
	Plan    Command = "plan"
	Apply   Command = "apply"
	Destroy Command = "destroy"
)

// Options describe one run.
type Options struct {
	Command Command
	Dir     string // the configuration directory, absolute
	Context runctx.Context
	Store   store.Store
	// StoreURL names Store for the provider the engine starts; it may carry
	// credentials and is never printed.
	StoreURL string
	// Engine is the engine binary; ProviderBinary the executable that
	// serves the sponson provider (the sponson binary itself), offered to
	// the engine under ProviderVersion.
	Engine          string
	ProviderBinary  string
	ProviderVersion string
	Lease           lease.Config
	ApprovedBy      string
	// AllowOlderCommit lets an apply whose commit is older than the one the
	// scope last applied roll the scope back (--allow-older-commit).
	AllowOlderCommit bool
	// Ancestry compares commits; git in Dir when nil.
	Ancestry ancestry.Git
	// Protected says the environment is declared protected (sponson.hcl):
	// every apply and destroy needs a named approver, as in production.
	Protected bool
	// Declared is what the environment declares about identity
	// (sponson.hcl `identity` and `address_owned`), for every scope of the
	// environment alike.
	Declared ownership.Declaration
	Vars     []engine.VarArg
	// EngineFlags are the user's engine flags for plan and apply
	// (-target, -replace, -refresh-only, ...).
	EngineFlags engine.Flags
	// ImportOnly is set by `sponson import`: an apply whose plan may do
	// nothing but import objects (the import block it added), refused
	// before the engine writes otherwise.
	ImportOnly bool
	// Label names the command in the receipt when it is not Command
	// (`sponson import` runs an Apply).
	Label string
	// Report is where the run reports as it goes.
	Report Reporter
	// Job and Host describe this run in the scope's lease record, with the
	// context's commit and pull request, for whoever waits for it.
	Job  runctx.Job
	Host string
	// RunID identifies the run; NewRunID when empty.
	RunID string
	// SavePlan, in a plan, is where the saved plan goes (`plan -out`).
	SavePlan string
	// JSONPlan, in a plan, is where the engine's plan JSON goes, byte for
	// byte (`plan --json-plan FILE`), for the tools that read it.
	JSONPlan string
	// Saved, in an apply, is the saved plan to apply instead of planning
	// (`apply FILE`); the run refuses it with PLAN_STALE when it went
	// stale. PlanKey is the seal key of saved plans (SPONSON_PLAN_KEY).
	Saved   *savedplan.File
	PlanKey []byte
	// PlanText asks for the engine's own text of the plan in
	// Result.PlanText (one more engine call), for summaries.
	PlanText bool
	// OpenEngine starts the engine session; engine.Open when nil. Tests
	// replace it with a stand-in that speaks to the same state server.
	OpenEngine func(context.Context, engine.Options) (Engine, error)
	// ServeProvider serves the sponson provider from this process to the
	// engine (provider.EngineEnv, which the wrapper hands over: this package
	// does not import the provider) and returns the engine's variables that
	// name it; states is the run's store, which sponson_outputs reads other
	// stacks' outputs from. When nil no provider is served (an engine
	// stand-in needs none).
	ServeProvider func(ctx context.Context, version, dir string, states store.StateReader) (env []string, stop func(), err error)
	// Policy are the environment's policies from the trusted rules, which
	// judge the plan before anything is written (policy.go); nil: none.
	// ProposedPolicy are the checkout's own, when they differ from the
	// trusted ones: evaluated for the review, never judging the run.
	Policy         *policy.Set
	ProposedPolicy *policy.Set
}

// Reporter is where a run reports as it goes: the command builds it once,
// and every scope the command runs (gc's, drift's) reports through it.
type Reporter struct {
	// EngineOut receives the engine's own output as it runs.
	EngineOut io.Writer
	// Heartbeat is the longest the apply's log stays silent about a
	// resource in flight (engine.Options.Heartbeat; SPONSON_HEARTBEAT).
	Heartbeat time.Duration
	// OnWait, when set, receives each poll of a wait for the scope's lease
	// and its end (Done); without it each poll is an Info line.
	OnWait func(WaitEvent)
	// Warn and Info report progress as it happens; either may be nil.
	Warn func(string)
	Info func(string)
	// Section, when set, opens a named part of the engine's output (init,
	// plan, apply) and returns the function that closes it: GitLab's
	// collapsible log sections, GitHub's groups.
	Section func(name, title string) (end func())
	// Diagnostics, when set, receives the configuration's diagnostics
	// after a plan the engine refused, as its `validate -json` gives them:
	// with the file and line the plan's own text does not carry (GitHub's
	// annotations on the pull request's files). One more engine start, on a
	// failed plan only.
	Diagnostics func([]tfjson.Diagnostic)
	// Progress, when set, hears each step of the run (Progress), from more
	// than one goroutine: the engine's stream reports the apply's.
	Progress func(Progress)
}

// Validator is an engine that validates the configuration as JSON
// (*engine.Session).
type Validator interface {
	Validate(ctx context.Context) (*tfjson.ValidateOutput, []byte, error)
}

// Engine is what a run needs of the engine: *engine.Session, or a test's
// stand-in.
type Engine interface {
	Init(ctx context.Context) error
	SelectWorkspace(ctx context.Context, name string) error
	Plan(ctx context.Context, o engine.PlanOptions) (bool, error)
	ShowPlan(ctx context.Context, path string) (*tfjson.Plan, error)
	Apply(ctx context.Context, plan string) error
	Import(ctx context.Context, address, id string, vars []engine.VarArg) error
	StateRm(ctx context.Context, address string) error
	StatePull(ctx context.Context) ([]byte, error)
	StatePush(ctx context.Context, state []byte) error
	Describe() receipt.Engine
}

// Result is what a run did. It is filled as far as the run got, also when
// it returns an error.
type Result struct {
	RunID    string
	Command  Command
	Key      store.Key
	Status   string
	Summary  engine.Summary
	Receipt  *receipt.Receipt
	Engine   receipt.Engine
	Warnings []string
	// Running is the live lease a plan saw: an apply in progress.
	Running *store.LeaseInfo
	// Quarantined is set when the engine's errored.tfstate was moved into
	// the store.
	Quarantined bool
	// NeedsApproval is set on a plan whose apply will need --approved-by.
	NeedsApproval bool
	// ApprovedBy is the approver the run records: set only where an
	// approval was required (a protected environment, a production
	// change) and given, never merely because --approved-by was passed.
	ApprovedBy string
	// Plan is the engine's plan as JSON; it may hold sensitive values and
	// is never printed whole.
	Plan *tfjson.Plan
	// PlanText is the engine's own text of the plan with every value the
	// plan marks sensitive redacted (Options.PlanText).
	PlanText string
	// InheritedFrom names the predecessor scope of a succession this run
	// took part in.
	InheritedFrom string
	// LeaseWaits lists the holders this run waited for.
	LeaseWaits []store.LeaseInfo
	// Policies is the verdict of the policies on the plan (and of the
	// proposed ones), nil when none were evaluated.
	Policies *receipt.Policies
}

// PlanTexter is an engine that renders a saved plan as text
// (*engine.Session does).
type PlanTexter interface {
	ShowPlanText(ctx context.Context, path string) (string, error)
}

// PlanJSONer is an engine that also returns the bytes of a saved plan's
// JSON as the engine printed them (*engine.Session does).
type PlanJSONer interface {
	ShowPlanJSON(ctx context.Context, path string) (*tfjson.Plan, []byte, error)
}

// NewRunID returns a fresh run id: "run-" and 8 hex digits.
func NewRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "run-" + hex.EncodeToString(b)
}

// runner is one run: what every phase shares. The phases' own products
// travel from one to the next as values (workdir, loaded, engineRun,
// settled, checked, the checkpoint's receipt); what stays here is what
// every phase reads or writes, and what the run's goroutines share with it.
type runner struct {
	// o are the run's options, read by every phase (checkApproval settles
	// o.ApprovedBy).
	o Options
	// res is what the run did, which every phase fills as far as it gets.
	res *Result
	// key is the scope every phase works on.
	key store.Key
	// started is when the run started: every receipt it writes (the
	// settlement's, the handover's, the checkpoint's, the last) records
	// it, and the quarantine of the engine's errored state goes by it.
	started time.Time
	// held is the scope lease of a run that writes (acquire), nil in a
	// plan: every later phase writes through it, and its loss ends them.
	held *lease.Held
	// releases undo, in reverse order, what the phases took (release).
	releases []func()

	// What goroutines of the run write while the engine runs (the engine's
	// event callback serve hands it, the signal watcher of apply, the
	// provider's reads of other stacks): shared, not handed from one phase
	// to the next, so they are guarded (mu, atomic).
	mu sync.Mutex
	// completions records completed creates while the engine applies;
	// engineProcs are the engine's processes it pauses (pauseEngine).
	completions *completions
	engineProcs []int
	// hurried is set when a second signal stopped the engine at once.
	hurried bool
	// stackReads counts the other stacks' states the engine's
	// sponson_outputs read (the no-change fast path needs there to be none).
	stackReads atomic.Int64
	// schemesSeen are the environment's identity schemes as reindex left
	// them, which commit checks again under the intent lease
	// (schemesUnchanged); nil in a plan.
	schemesSeen map[string][]string
}

// Run performs o.Command.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.RunID == "" {
		o.RunID = NewRunID()
	}
	if o.Report.EngineOut == nil {
		o.Report.EngineOut = io.Discard
	}
	r := &runner{o: o, key: store.Key{Stack: o.Context.Stack, Environment: o.Context.Environment, Scope: o.Context.Scope}, started: time.Now()}
	r.res = &Result{RunID: o.RunID, Command: o.Command, Key: r.key}
	err := r.run(ctx)
	if err != nil && r.res.Status == "" {
		r.res.Status = receipt.StatusFailed
	}
	return r.res, err
}

// run is the list of the phases. A plan stops after the check (a plan that
// changes nothing before reading the plan's JSON), and so does an apply
// whose plan changes nothing (the fast path, unchanged.go); a destroy
// with nothing to destroy stops after prepare, one that only drops a copy
// of a predecessor's state after load.
func (r *runner) run(ctx context.Context) error {
	// Writes after an interrupt (the failed receipt, the release) must
	// still happen: they use a context that the interrupt does not cancel.
	bg := context.WithoutCancel(ctx)
	defer r.release()

	work, done, err := r.prepare(ctx)
	if err != nil || done {
		return err
	}
	if err := r.acquire(ctx, bg); err != nil {
		return err
	}
	ld, done, err := r.load(ctx, bg, work)
	if err != nil || done {
		return err
	}
	eng, err := r.serve(ctx, work, r.stateKey(ld.seen))
	if err != nil {
		return err
	}
	st, err := r.settle(ctx, eng, ld.prev)
	if err != nil {
		return err
	}
	if st.prev, err = r.reindex(ctx, eng, st.prev); err != nil {
		return err
	}
	chk, err := r.planAndCheck(ctx, eng, work, ld, st)
	if err != nil {
		return err
	}
	// A plan the policies refuse is still shown and saved; it fails once
	// it is (policy.go).
	denied := r.checkPolicies(ctx, chk, st.prev)
	if denied != nil && r.o.Command != Plan {
		return denied
	}
	if chk.fast && r.o.Command == Apply {
		// Nothing to apply and nothing the plan's values could change in
		// the receipt (unchanged.go).
		return r.recordUnchanged(bg, ld, st, chk)
	}
	if r.o.Command == Plan {
		r.planOutcome(chk)
		if err := r.savePlan(work, ld.seen, chk); err != nil {
			return err
		}
		return denied
	}
	rec, err := r.commitIntents(ctx, bg, eng, ld, st, chk)
	if err != nil {
		return err
	}
	applyErr, err := r.apply(bg, eng, chk, rec)
	if err != nil {
		return err
	}
	lateErr, err := r.record(ctx, bg, eng, ld, st, chk, rec, applyErr)
	if err != nil {
		return err
	}
	// A late identity hit is reported once the handover is finished: the
	// apply created what the receipt records, so the scope must be left as
	// the receipt says (issue 24 item 2).
	if err := r.finishSuccession(bg, ld.handover, rec); err != nil {
		return err
	}
	return lateErr
}

func (r *runner) warn(msg string) {
	r.res.Warnings = append(r.res.Warnings, msg)
	if r.o.Report.Warn != nil {
		r.o.Report.Warn(msg)
	}
}

// section opens a part of the engine's output (Options.Section).
func (r *runner) section(name, title string) func() {
	if r.o.Report.Section == nil {
		return func() {}
	}
	return r.o.Report.Section(name, title)
}

func (r *runner) info(msg string) {
	if r.o.Report.Info != nil {
		r.o.Report.Info(msg)
	}
}

// engineErr turns an engine failure caused by a lost lease or an interrupt
// into that cause.
func (r *runner) engineErr(ctx context.Context, err error) error {
	if r.held != nil {
		// The engine may have failed because a write of the provider was
		// refused before the renewal noticed the loss: the lease looks at
		// its record once, so such a run ends LOCK_LOST, not ENGINE_FAILED.
		if lost := r.held.Confirm(context.WithoutCancel(ctx)); lost != nil {
			return lost
		}
	}
	if ctx.Err() != nil {
		return errcode.Wrap(errcode.Interrupted, err, "interrupted")
	}
	return err
}
