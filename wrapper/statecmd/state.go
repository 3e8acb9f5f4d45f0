// Package statecmd is the family of a scope's state: state list, show, pull,
// push, rm and mv, output, show, and adopt.
package statecmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/scopeedit"
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/tfstate"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// StateOptions are the options of `sponson state` and its commands.
type StateOptions struct {
	*cmdutil.IO
	cmdutil.StoreFlags
	cmdutil.ContextFlags
	Wait        bool
	WaitTimeout time.Duration
	// ApprovedBy is the approver rm, mv and push need in a protected
	// environment (editApproval).
	ApprovedBy string
	// args are the command's arguments (rm ADDR..., mv SRC DST, ...).
	args []string
}

// NewCmdState builds `sponson state` with list, show, rm and mv.
func NewCmdState(f *cmdutil.Factory, out *cmdutil.Outcome) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Read and repair a scope's state: list, show, pull, rm, mv, push",
		Long: `State reads and repairs the state of the run's scope (detected as for apply, or
named with --scope, --pr or --branch) in the store, without the engine:

  list          the resource instances of the state (no lease)
  show ADDR     one instance's attributes, sensitive ones hidden (no lease)
  rm ADDR...    forget instances: the scope gives them up (the objects stay,
                warned about and recorded as released in the receipt)
  mv SRC DST    rename an instance or a resource; the scope keeps owning it
  pull          print the scope's state document, as the engine's state pull
  push PATH     replace the state with PATH ("-": standard input), as the
                engine's state push: same lineage, no older serial; objects
                another scope owns are refused, the ledger follows

rm, mv and push take the scope's lease (exit 3, LOCK_HELD, when a run holds it;
--wait queues), write the state fenced by it, and write a receipt whose
ledger matches the new state: an instance removed is no longer owned by the
scope (its destroy will not delete it, and another scope may take it), an
instance moved is owned under its new address. An entry a stopped run left
unresolved stays until 'sponson resolve' settles it, whatever rm or mv do at
its address. An ADDR without a key names
every instance of the resource; module.NAME everything in the module. A
configuration that keeps its own backend is refused: its state is not in the
store.

In a protected environment (production, or one sponson.hcl protects) rm, mv
and push change what the environment owns outside a plan, so they need a
named approver, as an apply does: --approved-by NAME (env
SPONSON_APPROVED_BY), one sponson.hcl allows. Without one they are refused
(exit 2, ENV_NOT_APPROVED) before the lease is taken or anything is written;
the receipt records the approver. list, show and pull only read and need
none.`,
		Args: cobra.ArbitraryArgs,
		RunE: cmdutil.NeedsSubcommand(out),
	}
	for _, c := range []*cobra.Command{newStatePull(f, out), newStatePush(f, out), newStateList(f, out), newStateShow(f, out), newStateRm(f, out), newStateMv(f, out)} {
		cmd.AddCommand(c)
	}
	// The engine's state commands take -no-color (NormalizeArgs spells it
	// --no-color); sponson's print no colour.
	cmd.PersistentFlags().Bool("no-color", false, "accepted; nothing is colored")
	_ = cmd.PersistentFlags().MarkHidden("no-color")
	return cmd
}

func (s *StateOptions) bind(cmd *cobra.Command, writes bool) {
	s.StoreFlags.Bind(cmd)
	fs := cmd.Flags()
	s.ContextFlags.Bind(cmd, cmdutil.ReadContextHelp)
	if writes {
		fs.BoolVar(&s.Wait, "wait", false, "wait for the scope's lease when a run holds it")
		fs.DurationVar(&s.WaitTimeout, "wait-timeout", cmdutil.WaitDefault, "how long --wait waits before WAIT_TIMEOUT")
		cmdutil.BindApprovedBy(cmd, &s.ApprovedBy, "the edit")
	}
}

func stateCmd(f *cmdutil.Factory, out *cmdutil.Outcome, use, short string, args cobra.PositionalArgs, writes bool, run func(ctx context.Context, o *StateOptions, args []string) cmdutil.Outcome) *cobra.Command {
	opts := &StateOptions{IO: f.IO()}
	cmd := &cobra.Command{
		Use: use, Short: short, Args: args,
		RunE: cmdutil.RunE(f, out, opts, func(cmd *cobra.Command, args []string) error {
			opts.args = args
			return opts.Prepare(cmd, opts.Getenv)
		}, nil, func(ctx context.Context, o *StateOptions) cmdutil.Outcome {
			return run(ctx, o, o.args)
		}),
	}
	opts.bind(cmd, writes)
	return cmd
}

// scopeState opens the store and reads the scope's state document.
func (s *StateOptions) scopeState(ctx context.Context) (store.Store, store.Key, []byte, error) {
	st, _, env, err := s.Open(ctx, s.Getenv)
	if err != nil {
		return nil, store.Key{}, nil, err
	}
	dir, _ := filepath.Abs(cmdutil.OrDot(s.Chdir))
	if b, err := engine.DeclaredBackend(dir); err == nil && b != "" {
		st.Close()
		return nil, store.Key{}, nil, errcode.New(errcode.Usage, "the configuration in %s keeps its own %q backend: its state is not in the sponson store", dir, b).
			WithHint("Use the engine's own state commands on that backend, or adopt its state into the store (`sponson adopt`).")
	}
	key, err := s.Detect(s.Getenv, s.Chdir, env)
	if err != nil {
		st.Close()
		return nil, store.Key{}, nil, err
	}
	data, err := st.ReadState(ctx, key)
	if err != nil {
		st.Close()
		return nil, store.Key{}, nil, err
	}
	return st, key, data, nil
}

// readScopeState reads the scope's state document for a command that only
// reads it (list, show): the store is closed before it returns.
func (s *StateOptions) readScopeState(ctx context.Context) (store.Key, tfstate.Doc, error) {
	st, key, data, err := s.scopeState(ctx)
	if err != nil {
		return store.Key{}, nil, err
	}
	st.Close()
	doc, err := parseState(data)
	return key, doc, err
}

// parseState reads the scope's state document.
func parseState(data []byte) (tfstate.Doc, error) {
	doc, err := tfstate.Parse(data)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "the scope's state is not JSON")
	}
	return doc, nil
}

func newStateList(f *cmdutil.Factory, out *cmdutil.Outcome) *cobra.Command {
	return stateCmd(f, out, "list [flags]", "List the resource instances of a scope's state", cobra.NoArgs, false, func(ctx context.Context, o *StateOptions, _ []string) cmdutil.Outcome {
		res := cmdutil.Outcome{Command: "state list"}
		key, doc, err := o.readScopeState(ctx)
		if err != nil {
			res.Err = err
			return res
		}
		addrs := []string{}
		for _, i := range doc.Instances() {
			addrs = append(addrs, i.Addr.String())
		}
		sort.Strings(addrs)
		res.Result = map[string]any{"environment": key.Environment, "scope": key.Scope, "addresses": addrs}
		if !o.JSON {
			for _, a := range addrs {
				fmt.Fprintln(o.Out, a)
			}
		}
		return res
	})
}

func newStatePull(f *cmdutil.Factory, out *cmdutil.Outcome) *cobra.Command {
	return stateCmd(f, out, "pull [flags]", "Print the scope's state document, as the engine's state pull does", cobra.NoArgs, false, func(ctx context.Context, o *StateOptions, _ []string) cmdutil.Outcome {
		res := cmdutil.Outcome{Command: "state pull"}
		st, key, data, err := o.scopeState(ctx)
		if err != nil {
			res.Err = err
			return res
		}
		st.Close()
		if o.JSON {
			doc, err := parseState(data)
			if err != nil {
				res.Err = err
				return res
			}
			res.Result = map[string]any{"environment": key.Environment, "scope": key.Scope, "state": doc}
			return res
		}
		_, _ = o.Out.Write(data)
		return res
	})
}

func newStatePush(f *cmdutil.Factory, out *cmdutil.Outcome) *cobra.Command {
	cmd := stateCmd(f, out, "push PATH [flags]", "Replace the scope's state with a state file, under its lease, the ledger following", cobra.ExactArgs(1), true, func(ctx context.Context, o *StateOptions, args []string) cmdutil.Outcome {
		var data []byte
		var err error
		if args[0] == "-" {
			data, err = io.ReadAll(o.In)
		} else {
			data, err = os.ReadFile(args[0])
		}
		if err != nil {
			return cmdutil.Outcome{Command: "state push", Err: errcode.Wrap(errcode.Usage, err, "state push: reading %s", args[0]).
				WithHint("Give a state file (`sponson state pull > FILE` writes the scope's), or - for standard input.")}
		}
		return stateChange(ctx, o, "state push", func() map[string]string { return nil },
			func(ctx context.Context, s *scopeedit.Scope) (scopeedit.Change, error) {
				declared, err := cmdutil.DeclaredIdentity(ctx, o.Getenv, o.Chdir, s.Key.Environment)
				if err != nil {
					return scopeedit.Change{}, err
				}
				return scopeedit.Push("state push", declared, data, stateWarn(o))(ctx, s)
			})
	})
	cmd.Long = `Push replaces the scope's state with the state file PATH ("-" reads standard input),
as the engine's state push does, under the scope's lease: the state is written fenced,
then a receipt whose ledger matches it. The file must be of the scope's lineage and no
older than its serial (the engine's rule); it is written with the next serial. An object
the scope owned stays owned as it was, one it did not comes in adopted, as by an import,
and one the file lacks is released, as by state rm (warned about; the object stays).
Objects another scope of the environment owns are refused (OWNED_BY_OTHER_SCOPE), and
nothing is written. An entry a stopped run left unresolved stays until 'sponson
resolve' settles it. In a protected environment (production, or one sponson.hcl
protects) push needs --approved-by NAME (env SPONSON_APPROVED_BY), one sponson.hcl
allows: without it, ENV_NOT_APPROVED (exit 2) and nothing is leased or written; the
receipt records the approver.`
	return cmd
}

func newStateShow(f *cmdutil.Factory, out *cmdutil.Outcome) *cobra.Command {
	return stateCmd(f, out, "show ADDR [flags]", "Show one resource instance of a scope's state", cobra.ExactArgs(1), false, func(ctx context.Context, o *StateOptions, args []string) cmdutil.Outcome {
		res := cmdutil.Outcome{Command: "state show"}
		t, err := tfstate.ParseAddr(args[0])
		if err != nil {
			res.Err = errcode.Wrap(errcode.Usage, err, "state show")
			return res
		}
		key, doc, err := o.readScopeState(ctx)
		if err != nil {
			res.Err = err
			return res
		}
		var found []tfstate.Instance
		for _, i := range doc.Instances() {
			if tfstate.Matches(t, i.Addr) {
				found = append(found, i)
			}
		}
		if len(found) != 1 || t.Type == "" {
			res.Err = errcode.New(errcode.Usage, "%s names %d instances in the state of %s; show needs exactly one", args[0], len(found), key).
				WithHint("Run `sponson state list` for the addresses.")
			return res
		}
		i := found[0]
		attrs, _ := i.Instance["attributes"].(map[string]any)
		hidden := i.SensitiveNames()
		shown := map[string]any{}
		for k, v := range attrs {
			if hidden[k] {
				v = "(sensitive value)"
			}
			shown[k] = v
		}
		res.Result = map[string]any{"environment": key.Environment, "scope": key.Scope, "address": i.Addr.String(), "attributes": shown}
		if !o.JSON {
			writeInstance(o.Out, i.Addr, shown, hidden)
		}
		return res
	})
}

func writeInstance(w io.Writer, a tfstate.Addr, attrs map[string]any, hidden map[string]bool) {
	fmt.Fprintf(w, "# %s:\n", a)
	kind := "resource"
	if a.Mode == "data" {
		kind = "data"
	}
	fmt.Fprintf(w, "%s %q %q {\n", kind, a.Type, a.Name)
	names := make([]string, 0, len(attrs))
	for k := range attrs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := HCLValue(attrs[k], "    ")
		if hidden[k] {
			v = "(sensitive value)"
		}
		fmt.Fprintf(w, "    %s = %s\n", k, v)
	}
	fmt.Fprintln(w, "}")
}

// stateChange performs a state change outside a run (scopeedit.Edit):
// under the scope's lease, the state is written fenced, then a receipt whose
// ledger follows. moved says where each address went ("" for removed),
// once edit has run.
func stateChange(ctx context.Context, o *StateOptions, command string, moved func() map[string]string, edit func(context.Context, *scopeedit.Scope) (scopeedit.Change, error)) cmdutil.Outcome {
	res := cmdutil.Outcome{Command: command}
	st, key, _, err := o.scopeState(ctx)
	if err != nil {
		res.Err = err
		return res
	}
	defer st.Close()
	approval, err := cmdutil.EditApproval(o.Getenv, o.Chdir, key.Environment, command, o.ApprovedBy)
	if err != nil {
		res.Err = err
		return res
	}
	c, err := scopeedit.Edit(ctx, scopeedit.Options{
		Store: st, Key: key, RunID: scoperun.NewRunID(), Actor: runctx.DetectJob(o.Getenv).Actor, Approval: approval,
		Lease: lease.Config{TTL: lease.DefaultTTL, Wait: o.Wait, WaitTimeout: o.WaitTimeout}, Warn: stateWarn(o),
	}, edit)
	if err != nil {
		res.Err = err
		return res
	}
	rec, m := c.Receipt, moved()
	res.Result = map[string]any{"environment": key.Environment, "scope": key.Scope, "runId": rec.RunID, "changes": m, "owned": len(rec.Ledger)}
	if !o.JSON {
		from := make([]string, 0, len(m))
		for a := range m {
			from = append(from, a)
		}
		sort.Strings(from)
		for _, a := range from {
			if m[a] == "" {
				fmt.Fprintf(o.Out, "Removed %s\n", a)
			} else {
				fmt.Fprintf(o.Out, "Moved %s to %s\n", a, m[a])
			}
		}
		fmt.Fprintf(o.Out, "sponson %s %s: the scope owns %d resources; receipt %s\n", command, key, len(rec.Ledger), rec.RunID)
	}
	return res
}

func stateWarn(o *StateOptions) func(string) {
	return func(w string) { fmt.Fprintf(o.ErrOut, "warning: %s\n", w) }
}

// moveChange is stateChange for rm and mv: change rewrites the state
// document and says where each address went.
func moveChange(ctx context.Context, o *StateOptions, command string, change func(tfstate.Doc) (map[string]string, error)) cmdutil.Outcome {
	var moved map[string]string
	return stateChange(ctx, o, command, func() map[string]string { return moved },
		scopeedit.EditState(command, stateWarn(o), func(doc tfstate.Doc) (map[string]string, error) {
			m, err := change(doc)
			moved = m
			return m, err
		}))
}

func newStateRm(f *cmdutil.Factory, out *cmdutil.Outcome) *cobra.Command {
	return stateCmd(f, out, "rm ADDR... [flags]", "Forget resource instances: the scope gives them up", cobra.MinimumNArgs(1), true, func(ctx context.Context, o *StateOptions, args []string) cmdutil.Outcome {
		var targets []tfstate.Addr
		for _, a := range args {
			t, err := tfstate.ParseAddr(a)
			if err != nil {
				return cmdutil.Outcome{Command: "state rm", Err: errcode.Wrap(errcode.Usage, err, "state rm")}
			}
			targets = append(targets, t)
		}
		return moveChange(ctx, o, "state rm", func(doc tfstate.Doc) (map[string]string, error) { return doc.Remove(targets) })
	})
}

func newStateMv(f *cmdutil.Factory, out *cmdutil.Outcome) *cobra.Command {
	return stateCmd(f, out, "mv SRC DST [flags]", "Rename a resource or resource instance in a scope's state", cobra.ExactArgs(2), true, func(ctx context.Context, o *StateOptions, args []string) cmdutil.Outcome {
		src, err := tfstate.ParseAddr(args[0])
		if err == nil && src.Type == "" {
			err = fmt.Errorf("%q is a module; move its resources one by one", args[0])
		}
		var dst tfstate.Addr
		if err == nil {
			dst, err = tfstate.ParseAddr(args[1])
		}
		if err == nil && (dst.Type != src.Type || dst.Mode != src.Mode) {
			err = fmt.Errorf("%s and %s are not of the same resource type", args[0], args[1])
		}
		if err == nil && dst.HasKey != src.HasKey {
			err = fmt.Errorf("move a resource to a resource, or an instance to an instance")
		}
		if err != nil {
			return cmdutil.Outcome{Command: "state mv", Err: errcode.Wrap(errcode.Usage, err, "state mv")}
		}
		return moveChange(ctx, o, "state mv", func(doc tfstate.Doc) (map[string]string, error) { return doc.Move(src, dst) })
	})
}
