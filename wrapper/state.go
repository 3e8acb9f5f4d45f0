package wrapper

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// StateOptions are the options of `sponson state` and its commands.
type StateOptions struct {
	StoreFlags
	Scope, PR, Branch, Stack string
	Wait                     bool
	WaitTimeout              time.Duration
}

// NewCmdState builds `sponson state` with list, show, rm and mv.
func NewCmdState(f *Factory, out *outcome) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Read and repair a scope's state: list, show, rm, mv",
		Long: `State reads and repairs the state of the run's scope (detected as for apply, or
named with --scope, --pr or --branch) in the store, without the engine:

  list          the resource instances of the state (no lease)
  show ADDR     one instance's attributes, sensitive ones hidden (no lease)
  rm ADDR...    forget instances: the scope gives them up (the objects stay,
                warned about and recorded as released in the receipt)
  mv SRC DST    rename an instance or a resource; the scope keeps owning it

rm and mv take the scope's lease (exit 3, LOCK_HELD, when a run holds it;
--wait queues), write the state fenced by it, and write a receipt whose
ledger matches the new state: an instance removed is no longer owned by the
scope (its destroy will not delete it, and another scope may take it), an
instance moved is owned under its new address. An entry a stopped run left
unresolved stays until 'sponson resolve' settles it, whatever rm or mv do at
its address. An ADDR without a key names
every instance of the resource; module.NAME everything in the module. A
configuration that keeps its own backend is refused: its state is not in the
store.`,
	}
	for _, c := range []*cobra.Command{newStateList(f, out), newStateShow(f, out), newStateRm(f, out), newStateMv(f, out)} {
		cmd.AddCommand(c)
	}
	return cmd
}

func (s *StateOptions) bind(cmd *cobra.Command, writes bool) {
	s.StoreFlags.bind(cmd)
	fs := cmd.Flags()
	fs.StringVar(&s.Scope, "scope", "", "scope name (env SPONSON_CTX_SCOPE)")
	fs.StringVar(&s.PR, "pr", "", "pull request number: scope pr-<n> (env SPONSON_CTX_PR)")
	fs.StringVar(&s.Branch, "branch", "", "branch: scope main or branch-<name> (env SPONSON_CTX_BRANCH)")
	bindStack(cmd, &s.Stack, stackFlagHelp)
	if writes {
		fs.BoolVar(&s.Wait, "wait", false, "wait for the scope's lease when a run holds it")
		fs.DurationVar(&s.WaitTimeout, "wait-timeout", waitDefault, "how long --wait waits before WAIT_TIMEOUT")
	}
}

func stateCmd(out *outcome, use, short string, args cobra.PositionalArgs, writes bool, run func(cmd *cobra.Command, o *StateOptions, args []string) outcome) *cobra.Command {
	opts := &StateOptions{}
	cmd := &cobra.Command{
		Use: use, Short: short, Args: args,
		RunE: func(cmd *cobra.Command, args []string) error {
			*out = run(cmd, opts, args)
			return nil
		},
	}
	opts.bind(cmd, writes)
	return cmd
}

// scopeState opens the store and reads the scope's state document.
func (s *StateOptions) scopeState(cmd *cobra.Command, f *Factory) (store.Store, store.Key, []byte, error) {
	st, _, env, err := s.open(cmd, f)
	if err != nil {
		return nil, store.Key{}, nil, err
	}
	dir, _ := filepath.Abs(orDot(s.Chdir))
	if b, err := engine.DeclaredBackend(dir); err == nil && b != "" {
		st.Close()
		return nil, store.Key{}, nil, errcode.New(errcode.Usage, "the configuration in %s keeps its own %q backend: its state is not in the sponson store", dir, b).
			WithHint("Use the engine's own state commands on that backend, or adopt its state into the store (`sponson adopt`).")
	}
	key, err := scopeKey(f, s.Chdir, env, s.Scope, s.PR, s.Branch, s.Stack)
	if err != nil {
		st.Close()
		return nil, store.Key{}, nil, err
	}
	data, err := st.ReadState(cmd.Context(), key)
	if err != nil {
		st.Close()
		return nil, store.Key{}, nil, err
	}
	return st, key, data, nil
}

// readScopeState reads the scope's state document for a command that only
// reads it (list, show): the store is closed before it returns.
func (s *StateOptions) readScopeState(cmd *cobra.Command, f *Factory) (store.Key, tfState, error) {
	st, key, data, err := s.scopeState(cmd, f)
	if err != nil {
		return store.Key{}, nil, err
	}
	st.Close()
	doc, err := parseTFState(data)
	return key, doc, err
}

// tfState is a state document, kept whole so that what sponson does not
// touch is written back as it was.
type tfState map[string]any

type stateInstance struct {
	addr     stateAddr
	resource map[string]any
	instance map[string]any
}

func parseTFState(data []byte) (tfState, error) {
	if strings.TrimSpace(string(data)) == "" {
		return tfState{"version": 4.0, "resources": []any{}}, nil
	}
	var s tfState
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "the scope's state is not JSON")
	}
	return s, nil
}

func (s tfState) resources() []map[string]any {
	list, _ := s["resources"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, r := range list {
		if m, ok := r.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func (s tfState) setResources(rs []map[string]any) {
	list := make([]any, 0, len(rs))
	for _, r := range rs {
		list = append(list, r)
	}
	s["resources"] = list
}

func resourceAddr(r map[string]any) stateAddr {
	str := func(k string) string { v, _ := r[k].(string); return v }
	return stateAddr{Module: str("module"), Mode: str("mode"), Type: str("type"), Name: str("name")}
}

func instancesOf(r map[string]any) []map[string]any {
	list, _ := r["instances"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, i := range list {
		if m, ok := i.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func (s tfState) instances() []stateInstance {
	var out []stateInstance
	for _, r := range s.resources() {
		base := resourceAddr(r)
		for _, inst := range instancesOf(r) {
			a := base
			a.Key, a.HasKey = inst["index_key"]
			out = append(out, stateInstance{addr: a, resource: r, instance: inst})
		}
	}
	return out
}

// matches reports whether the instance at a falls under the target t.
func matches(t, a stateAddr) bool {
	if t.Type == "" {
		return a.Module == t.Module || strings.HasPrefix(a.Module, t.Module+".")
	}
	if a.Module != t.Module || a.Mode != t.Mode || a.Type != t.Type || a.Name != t.Name {
		return false
	}
	return !t.HasKey || (a.HasKey && fmt.Sprint(a.Key) == fmt.Sprint(t.Key))
}

func (s tfState) marshal() ([]byte, error) {
	serial, _ := s["serial"].(float64)
	s["serial"] = serial + 1
	b, err := json.MarshalIndent(s, "", "  ")
	return append(b, '\n'), err
}

func newStateList(f *Factory, out *outcome) *cobra.Command {
	return stateCmd(out, "list [flags]", "List the resource instances of a scope's state", cobra.NoArgs, false, func(cmd *cobra.Command, o *StateOptions, _ []string) outcome {
		res := outcome{command: "state list"}
		key, doc, err := o.readScopeState(cmd, f)
		if err != nil {
			res.err = err
			return res
		}
		addrs := []string{}
		for _, i := range doc.instances() {
			addrs = append(addrs, i.addr.String())
		}
		sort.Strings(addrs)
		res.result = map[string]any{"environment": key.Environment, "scope": key.Scope, "addresses": addrs}
		if !jsonWanted(cmd, f) {
			for _, a := range addrs {
				fmt.Fprintln(f.Out, a)
			}
		}
		return res
	})
}

func jsonWanted(cmd *cobra.Command, f *Factory) bool {
	j, _ := cmd.Flags().GetBool("json")
	return j || wantsJSON(nil, f.Getenv)
}

func newStateShow(f *Factory, out *outcome) *cobra.Command {
	return stateCmd(out, "show ADDR [flags]", "Show one resource instance of a scope's state", cobra.ExactArgs(1), false, func(cmd *cobra.Command, o *StateOptions, args []string) outcome {
		res := outcome{command: "state show"}
		t, err := parseStateAddr(args[0])
		if err != nil {
			res.err = errcode.Wrap(errcode.Usage, err, "state show")
			return res
		}
		key, doc, err := o.readScopeState(cmd, f)
		if err != nil {
			res.err = err
			return res
		}
		var found []stateInstance
		for _, i := range doc.instances() {
			if matches(t, i.addr) {
				found = append(found, i)
			}
		}
		if len(found) != 1 || t.Type == "" {
			res.err = errcode.New(errcode.Usage, "%s names %d instances in the state of %s; show needs exactly one", args[0], len(found), key).
				WithHint("Run `sponson state list` for the addresses.")
			return res
		}
		i := found[0]
		attrs, _ := i.instance["attributes"].(map[string]any)
		hidden := sensitiveNames(i.instance)
		shown := map[string]any{}
		for k, v := range attrs {
			if hidden[k] {
				v = "(sensitive value)"
			}
			shown[k] = v
		}
		res.result = map[string]any{"environment": key.Environment, "scope": key.Scope, "address": i.addr.String(), "attributes": shown}
		if !jsonWanted(cmd, f) {
			writeInstance(f.Out, i.addr, shown, hidden)
		}
		return res
	})
}

// sensitiveNames are the top-level attributes an instance marks sensitive.
func sensitiveNames(inst map[string]any) map[string]bool {
	out := map[string]bool{}
	paths, _ := inst["sensitive_attributes"].([]any)
	for _, p := range paths {
		steps, _ := p.([]any)
		if len(steps) == 0 {
			continue
		}
		if step, ok := steps[0].(map[string]any); ok {
			if name, ok := step["value"].(string); ok {
				out[name] = true
			}
		}
	}
	return out
}

func writeInstance(w io.Writer, a stateAddr, attrs map[string]any, hidden map[string]bool) {
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
		v := hclValue(attrs[k], "    ")
		if hidden[k] {
			v = "(sensitive value)"
		}
		fmt.Fprintf(w, "    %s = %s\n", k, v)
	}
	fmt.Fprintln(w, "}")
}

// stateChange performs a state change under the scope's lease: edit
// changes the document and says which addresses went where (to "" for
// removed); the state is written fenced, then a receipt whose ledger follows.
func stateChange(cmd *cobra.Command, f *Factory, o *StateOptions, command string, edit func(doc tfState) (map[string]string, error)) outcome {
	res := outcome{command: command}
	st, key, _, err := o.scopeState(cmd, f)
	if err != nil {
		res.err = err
		return res
	}
	defer st.Close()
	ctx := cmd.Context()
	runID := scoperun.NewRunID()
	held, err := lease.Acquire(ctx, st, key, runID, lease.Config{TTL: lease.DefaultTTL, Wait: o.Wait, WaitTimeout: o.WaitTimeout})
	if err != nil {
		res.err = err
		return res
	}
	bg := context.WithoutCancel(ctx)
	defer func() {
		if w := held.Release(bg); w != "" {
			fmt.Fprintf(f.ErrOut, "warning: %s\n", w)
		}
	}()
	// Read again under the lease: what was read before may be stale.
	data, err := st.ReadState(ctx, key)
	if err != nil {
		res.err = err
		return res
	}
	doc, err := parseTFState(data)
	if err != nil {
		res.err = err
		return res
	}
	moved, err := edit(doc)
	if err != nil {
		res.err = err
		return res
	}
	prev, err := st.LatestReceipt(ctx, key)
	if err != nil {
		res.err = err
		return res
	}
	out, err := doc.marshal()
	if err != nil {
		res.err = errcode.Wrap(errcode.Internal, err, "encoding the state")
		return res
	}
	if err := held.WriteState(bg, out); err != nil {
		res.err = err
		return res
	}
	now := time.Now().UTC()
	rec := &receipt.Receipt{Version: receipt.Version, Environment: key.Environment, Scope: key.Scope, Ledger: []receipt.Entry{}}
	if prev != nil {
		cp := *prev
		rec = &cp
		rec.Version, rec.Settled, rec.LockPreempted, rec.AllowedOlderCommit, rec.Unlocked, rec.Error = receipt.Version, nil, nil, nil, nil, nil
		rec.Ledger = nil
		for _, e := range prev.Ledger {
			to, touched := moved[e.Address]
			open := e.CreatedBy == receipt.CreatedByIntent || e.CreatedBy == receipt.CreatedByUnresolved
			switch {
			case !touched || open:
				// An open entry stands for an object no state holds: what
				// is at its address in the state is another one.
			case to == "":
				rec.Released = append(rec.Released, e)
				fmt.Fprintf(f.ErrOut, "warning: %s (id %s) is released: state rm took it out of the state without destroying it, so no scope owns it any more and no scope's destroy will delete it\n", e.Address, e.ID)
				continue
			default:
				e.Address = to
				if ownership.IsAddressIdentity(e.Identity) {
					// Owned by its address: the address it has now.
					e.Identity = store.AddressIdentity(e.Provider, e.Type, to)
				}
			}
			rec.Ledger = append(rec.Ledger, e)
		}
		if rec.Ledger == nil {
			rec.Ledger = []receipt.Entry{}
		}
	}
	rec.RunID, rec.Command, rec.Status = runID, command, receipt.StatusApplied
	rec.StartedAt, rec.FinishedAt, rec.ApprovedBy = now, now, ""
	rec.Changes = []receipt.Change{}
	from := make([]string, 0, len(moved))
	for a := range moved {
		from = append(from, a)
	}
	sort.Strings(from)
	for _, a := range from {
		action := "forget"
		if moved[a] != "" {
			action = "move"
		}
		rec.Changes = append(rec.Changes, receipt.Change{Address: a, Actions: []string{action}})
	}
	if err := held.WriteReceipt(bg, rec); err != nil {
		res.err = err
		return res
	}
	res.result = map[string]any{"environment": key.Environment, "scope": key.Scope, "runId": runID, "changes": moved, "owned": len(rec.Ledger)}
	if !jsonWanted(cmd, f) {
		for _, a := range from {
			if moved[a] == "" {
				fmt.Fprintf(f.Out, "Removed %s\n", a)
			} else {
				fmt.Fprintf(f.Out, "Moved %s to %s\n", a, moved[a])
			}
		}
		fmt.Fprintf(f.Out, "sponson %s %s: the scope owns %d resources; receipt %s\n", command, key, len(rec.Ledger), runID)
	}
	return res
}

func newStateRm(f *Factory, out *outcome) *cobra.Command {
	return stateCmd(out, "rm ADDR... [flags]", "Forget resource instances: the scope gives them up", cobra.MinimumNArgs(1), true, func(cmd *cobra.Command, o *StateOptions, args []string) outcome {
		var targets []stateAddr
		for _, a := range args {
			t, err := parseStateAddr(a)
			if err != nil {
				return outcome{command: "state rm", err: errcode.Wrap(errcode.Usage, err, "state rm")}
			}
			targets = append(targets, t)
		}
		return stateChange(cmd, f, o, "state rm", func(doc tfState) (map[string]string, error) {
			removed := map[string]string{}
			var keep []map[string]any
			for _, r := range doc.resources() {
				base := resourceAddr(r)
				var left []any
				for _, inst := range instancesOf(r) {
					a := base
					a.Key, a.HasKey = inst["index_key"]
					hit := false
					for _, t := range targets {
						hit = hit || matches(t, a)
					}
					if hit {
						removed[a.String()] = ""
						continue
					}
					left = append(left, inst)
				}
				if len(left) > 0 {
					r["instances"] = left
					keep = append(keep, r)
				}
			}
			if len(removed) == 0 {
				return nil, errcode.New(errcode.Usage, "no instance of the state matches %s", strings.Join(args, " ")).
					WithHint("Run `sponson state list` for the addresses.")
			}
			doc.setResources(keep)
			return removed, nil
		})
	})
}

func newStateMv(f *Factory, out *outcome) *cobra.Command {
	return stateCmd(out, "mv SRC DST [flags]", "Rename a resource or resource instance in a scope's state", cobra.ExactArgs(2), true, func(cmd *cobra.Command, o *StateOptions, args []string) outcome {
		src, err := parseStateAddr(args[0])
		if err == nil && src.Type == "" {
			err = fmt.Errorf("%q is a module; move its resources one by one", args[0])
		}
		var dst stateAddr
		if err == nil {
			dst, err = parseStateAddr(args[1])
		}
		if err == nil && (dst.Type != src.Type || dst.Mode != src.Mode) {
			err = fmt.Errorf("%s and %s are not of the same resource type", args[0], args[1])
		}
		if err == nil && dst.HasKey != src.HasKey {
			err = fmt.Errorf("move a resource to a resource, or an instance to an instance")
		}
		if err != nil {
			return outcome{command: "state mv", err: errcode.Wrap(errcode.Usage, err, "state mv")}
		}
		return stateChange(cmd, f, o, "state mv", func(doc tfState) (map[string]string, error) {
			return moveInState(doc, src, dst)
		})
	})
}

// moveInState renames the resource src to dst (both without a key), or
// moves the instance src to the instance dst.
func moveInState(doc tfState, src, dst stateAddr) (map[string]string, error) {
	moved := map[string]string{}
	rs := doc.resources()
	var from, to map[string]any
	for _, r := range rs {
		a := resourceAddr(r)
		a.Key, a.HasKey = nil, false
		s, d := src, dst
		s.Key, s.HasKey, d.Key, d.HasKey = nil, false, nil, false
		if a == s {
			from = r
		}
		if a == d {
			to = r
		}
	}
	if from == nil {
		return nil, errcode.New(errcode.Usage, "no resource of the state is %s", src).WithHint("Run `sponson state list` for the addresses.")
	}
	setAddr := func(r map[string]any, a stateAddr) {
		if a.Module == "" {
			delete(r, "module")
		} else {
			r["module"] = a.Module
		}
		r["name"] = a.Name
	}
	if !src.HasKey {
		if to != nil {
			return nil, errcode.New(errcode.Usage, "%s is in the state already", dst)
		}
		for _, inst := range instancesOf(from) {
			a, b := src, dst
			a.Key, a.HasKey = inst["index_key"]
			b.Key, b.HasKey = a.Key, a.HasKey
			moved[a.String()] = b.String()
		}
		setAddr(from, dst)
		return moved, nil
	}
	var inst map[string]any
	var left []any
	for _, i := range instancesOf(from) {
		a := src
		a.Key, a.HasKey = i["index_key"]
		if matches(src, a) && inst == nil {
			inst = i
			continue
		}
		left = append(left, i)
	}
	if inst == nil {
		return nil, errcode.New(errcode.Usage, "no instance of the state is %s", src).WithHint("Run `sponson state list` for the addresses.")
	}
	if to != nil {
		for _, i := range instancesOf(to) {
			a := dst
			a.Key, a.HasKey = i["index_key"]
			if matches(dst, a) {
				return nil, errcode.New(errcode.Usage, "%s is in the state already", dst)
			}
		}
	}
	inst["index_key"] = dst.Key
	if to == nil {
		to = map[string]any{}
		for k, v := range from {
			to[k] = v
		}
		setAddr(to, dst)
		to["instances"] = []any{}
		rs = append(rs, to)
	}
	if to["name"] == from["name"] && to["module"] == from["module"] {
		left = append(left, inst)
		from["instances"] = left
	} else {
		list, _ := to["instances"].([]any)
		to["instances"] = append(list, inst)
		from["instances"] = left
	}
	var keep []map[string]any
	for _, r := range rs {
		if len(instancesOf(r)) > 0 {
			keep = append(keep, r)
		}
	}
	doc.setResources(keep)
	moved[src.String()] = dst.String()
	return moved, nil
}
