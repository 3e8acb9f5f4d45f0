package engine

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// VarArg is one -var or -var-file argument, as the user spelled it.
type VarArg struct {
	File  bool   // -var-file when true, -var otherwise
	Value string // NAME=VALUE, or the file path
}

// Options configure a Session.
type Options struct {
	Dir    string // the configuration directory
	Binary string // the engine binary (see Locate)
	// Env is added to the process environment before the engine runs.
	Env            []string
	Stdout, Stderr io.Writer
	// Flags are the user's engine flags for plan and apply.
	Flags Flags
	// OnEvent receives the resource events of an apply as the engine
	// reports them (see Event); nil ignores them.
	OnEvent func(Event)
	// OnReadEnd, when set, is called once the lines of one read of the
	// engine's output have gone to OnEvent: the events delivered since the
	// last call are all the engine had written when sponson read, so a
	// consumer that batches them (the checkpoint) takes those the engine
	// reported together in one batch.
	OnReadEnd func()
	// KeepCLIArgs leaves the user's TF_CLI_ARGS* to the engine: the engine
	// commands sponson runs as the engine would (init, validate, ...) read
	// them as the engine does. A run reads them itself and clears them.
	KeepCLIArgs bool
	// Heartbeat is the longest an apply's log stays silent about a
	// resource still in flight (DefaultHeartbeat when 0; none when
	// negative): see uiStream.beat.
	Heartbeat time.Duration
}

// Session drives one engine binary in one configuration directory through
// terraform-exec. The engine inherits the sponson process's environment
// (TF_VAR_*, TF_LOG*, TF_TOKEN_*, TF_PLUGIN_CACHE_DIR, cloud credentials):
// terraform-exec refuses TF_VAR_* in an explicit environment, and turning
// them into -var flags would change their precedence and make undeclared
// ones an error. So a sponson process runs one Session and Open sets its
// variables in the process environment.
type Session struct {
	tf      *tfexec.Terraform
	stdout  io.Writer // where init, plan and apply stream; JSON commands are silent
	stderr  io.Writer
	flags   Flags
	onEvent func(Event)
	readEnd func()
	// heartbeat is Options.Heartbeat, resolved.
	heartbeat time.Duration
	Binary    string
	Name      string // "opentofu" or "terraform"
	Version   string
}

// Open prepares the engine and reads its version.
func Open(ctx context.Context, o Options) (*Session, error) {
	if !o.KeepCLIArgs {
		clearCLIArgs()
	}
	for _, kv := range o.Env {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			return nil, errcode.Wrap(errcode.Internal, err, "setting %s for the engine", k)
		}
	}
	tf, err := tfexec.NewTerraform(o.Dir, o.Binary)
	if err != nil {
		return nil, errcode.Wrap(errcode.EngineNotFound, err, "cannot use engine %s", o.Binary)
	}
	if o.Stderr != nil {
		tf.SetStderr(o.Stderr)
	}
	// One terraform-exec instance, so the engine's version is read once
	// (it caches it for its compatibility checks), and from the version
	// cache when this binary was read before: every engine start costs tens
	// of milliseconds.
	v, err := engineVersion(tf, o.Binary, func() (*version.Version, error) {
		v, _, err := tf.Version(ctx, true)
		return v, err
	})
	if err != nil {
		return nil, errcode.Wrap(errcode.EngineFailed, err, "%s does not answer `version -json`", o.Binary)
	}
	name := "terraform"
	if strings.Contains(filepath.Base(o.Binary), "tofu") {
		name = "opentofu"
	}
	if err := o.Flags.check(name, v.String()); err != nil {
		return nil, errcode.New(errcode.Usage, "%v", err).WithHint("Remove the flag, or run this configuration with the other engine (--engine).")
	}
	if err := passLogging(tf); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "passing TF_LOG to the engine")
	}
	hb := o.Heartbeat
	if hb == 0 {
		hb = DefaultHeartbeat
	}
	return &Session{tf: tf, stdout: o.Stdout, stderr: o.Stderr, flags: o.Flags, onEvent: o.OnEvent, readEnd: o.OnReadEnd, heartbeat: hb, Binary: o.Binary, Name: name, Version: v.String()}, nil
}

// passLogging hands the user's TF_LOG, TF_LOG_CORE, TF_LOG_PROVIDER and
// TF_LOG_PATH to the engine. terraform-exec blanks them unless told
// otherwise (so that logs cannot pollute the JSON it reads from stdout);
// logs go to stderr, which streams to the run's output, when TF_LOG_PATH is
// unset, as they would without sponson.
func passLogging(tf *tfexec.Terraform) error {
	level, core, provider := os.Getenv("TF_LOG"), os.Getenv("TF_LOG_CORE"), os.Getenv("TF_LOG_PROVIDER")
	if level == "" && core == "" && provider == "" {
		return nil
	}
	for _, set := range []struct {
		value string
		fn    func(string) error
	}{{level, tf.SetLog}, {core, tf.SetLogCore}, {provider, tf.SetLogProvider}} {
		if set.value == "" {
			continue
		}
		if err := set.fn(set.value); err != nil {
			return err
		}
	}
	path := os.Getenv("TF_LOG_PATH")
	if path == "" {
		path = "/dev/stderr"
	}
	return tf.SetLogPath(path)
}

// Init initialises the configuration. -reconfigure because the backend is
// always Sponson's state server: there is never a state to migrate.
func (s *Session) Init(ctx context.Context) error {
	defer s.streaming()()
	return s.wrap("init", s.tf.Init(ctx, tfexec.Reconfigure(true), tfexec.Upgrade(false)))
}

// streaming sends the engine's output to the run's output until the
// returned function is called. Commands whose stdout is JSON for sponson to
// read do not stream.
func (s *Session) streaming() func() {
	if s.stdout != nil {
		s.tf.SetStdout(s.stdout)
	}
	return func() { s.tf.SetStdout(io.Discard) }
}

// PlanOptions are what one plan asks for beyond the session's flags.
type PlanOptions struct {
	// Out is where the saved plan goes.
	Out string
	// Destroy plans the destruction of every object of the state.
	Destroy bool
	// Lock takes the engine's state lock; false for read-only plans,
	// which must not.
	Lock bool
	// Vars are the -var and -var-file arguments, in command-line order.
	Vars []VarArg
}

// Plan writes a saved plan to o.Out and reports whether it has changes.
func (s *Session) Plan(ctx context.Context, o PlanOptions) (bool, error) {
	opts := append([]tfexec.PlanOption{tfexec.Out(o.Out), tfexec.Destroy(o.Destroy), tfexec.Lock(o.Lock)}, s.flags.planOptions()...)
	restore, err := withCLIArgs("plan", s.flags.planExtra(o.Vars))
	if err != nil {
		return false, errcode.Wrap(errcode.Internal, err, "passing -var and -var-file to the engine")
	}
	defer restore()
	defer s.streaming()()
	changed, err := s.tf.Plan(ctx, opts...)
	return changed, s.wrap("plan", err)
}

// ShowPlan reads a saved plan as JSON.
func (s *Session) ShowPlan(ctx context.Context, path string) (*tfjson.Plan, error) {
	p, err := s.tf.ShowPlanFile(ctx, path)
	return p, s.wrap("show", err)
}

// ShowPlanText renders a saved plan as the engine prints it, without
// colour; the engine redacts what it knows to be sensitive.
func (s *Session) ShowPlanText(ctx context.Context, path string) (string, error) {
	txt, err := s.tf.ShowPlanFileRaw(ctx, path)
	return txt, s.wrap("show", err)
}

// Apply applies a saved plan. It reads the engine's machine-readable UI
// (`apply -json`) so that every completed create reaches the run at once
// (OnEvent), and shows the same messages to the user as plain lines.
func (s *Session) Apply(ctx context.Context, plan string) error {
	restore, err := withCLIArgs("apply", s.flags.applyExtra())
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "passing flags to the engine")
	}
	defer restore()
	ui := s.applyUI()
	defer s.tf.SetStdout(io.Discard)
	stop := ui.heartbeat(s.heartbeat, time.Now)
	err = s.applyJSON(ctx, s.tf, ui, plan)
	stop()
	ui.Flush()
	return s.wrap("apply", ui.said(err))
}

// applyUI is the stream an apply's machine-readable UI goes to: the user
// sees its messages as plain lines, the run its events.
func (s *Session) applyUI() *uiStream {
	ui := newUIStream(s.stdout, s.onEvent)
	ui.readEnd = s.readEnd
	return ui
}

// applyJSON has tf apply plan with the session's flags, its UI stream
// going to w. The caller has set TF_CLI_ARGS_apply (withCLIArgs).
func (s *Session) applyJSON(ctx context.Context, tf *tfexec.Terraform, w io.Writer, plan string) error {
	return tf.ApplyJSON(ctx, w, append([]tfexec.ApplyOption{tfexec.DirOrPlan(plan)}, s.flags.applyOptions()...)...)
}

// Import adopts the existing object id at address into the state, under
// the configuration's variables.
func (s *Session) Import(ctx context.Context, address, id string, vars []VarArg) error {
	// The variables in their command-line order, as for plan.
	restore, err := withCLIArgs("import", Flags{}.planExtra(vars))
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "passing -var and -var-file to the engine")
	}
	defer restore()
	defer s.streaming()()
	return s.wrap("import", s.tf.Import(ctx, address, id))
}

// StateRm removes address from the state (the object is not touched).
func (s *Session) StateRm(ctx context.Context, address string) error {
	return s.wrap("state rm", s.tf.StateRm(ctx, address))
}

// Describe names the engine and its version, as receipts record them.
func (s *Session) Describe() receipt.Engine { return receipt.Engine{Name: s.Name, Version: s.Version} }

// StatePull returns the current state as the engine stores it.
func (s *Session) StatePull(ctx context.Context) ([]byte, error) {
	st, err := s.tf.StatePull(ctx)
	return []byte(st), s.wrap("state pull", err)
}

// StatePush replaces the current state with state, as the engine's `state
// push` does (the same lineage, a serial past the current one), through
// the engine: its backend, locking and encryption.
func (s *Session) StatePush(ctx context.Context, state []byte) error {
	f, err := os.CreateTemp("", "sponson-state-*.tfstate")
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "writing the state to push")
	}
	defer func() { _ = os.Remove(f.Name()) }()
	_, err = f.Write(state)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "writing the state to push")
	}
	return s.wrap("state push", s.tf.StatePush(ctx, f.Name()))
}

// SelectWorkspace selects the workspace name, creating it if it does not
// exist yet. It is how a configuration with its own backend keeps one state
// per scope.
func (s *Session) SelectWorkspace(ctx context.Context, name string) error {
	if err := s.tf.WorkspaceSelect(ctx, name); err == nil {
		return nil
	}
	return s.wrap("workspace new", s.tf.WorkspaceNew(ctx, name))
}

func (s *Session) wrap(step string, err error) error {
	if err == nil {
		return nil
	}
	return errcode.Wrap(errcode.EngineFailed, err, "%s %s failed", s.Name, step).With("step", step)
}

// Summary counts the actions of a plan, as the engine's own summary does.
type Summary struct {
	Add     int `json:"add"`
	Change  int `json:"change"`
	Destroy int `json:"destroy"`
}

func (s Summary) String() string {
	return fmt.Sprintf("%d to add, %d to change, %d to destroy", s.Add, s.Change, s.Destroy)
}

// Empty reports whether the plan changes nothing.
func (s Summary) Empty() bool { return s.Add+s.Change+s.Destroy == 0 }

// Summarize counts the managed-resource actions of a plan.
func Summarize(p *tfjson.Plan) Summary {
	var s Summary
	if p == nil {
		return s
	}
	for _, rc := range p.ResourceChanges {
		if rc.Change == nil || rc.Mode != tfjson.ManagedResourceMode {
			continue
		}
		a := rc.Change.Actions
		switch {
		case a.Replace():
			s.Add++
			s.Destroy++
		case a.Create():
			s.Add++
		case a.Update():
			s.Change++
		case a.Delete():
			s.Destroy++
		}
	}
	return s
}
