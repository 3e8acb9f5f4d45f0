package scoperun

// A stand-in engine for property tests of the run's core (property_test.go):
// fast and deterministic, it speaks to the run's state server exactly as the
// real engine's http backend does (GET the state, POST it with basic auth),
// and it keeps the "real" objects in a shared fake cloud, so a test can see
// what a sequence of runs actually created and deleted.
//
// The configuration is a set of objects named by the run's -var
// objects=a,b,c: each name is a resource fake_object.<name> of provider
// registry.opentofu.org/sponson/fake, whose id the cloud assigns on create
// (unknown at plan time, as for most real resources). The engine does not
// refresh: a state entry is believed, so a destroy of an object that is
// already gone shows up in the cloud as a second delete of the same id,
// which is exactly the evidence of an object that had two owners.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
)

const (
	fakeType     = "fake_object"
	fakeProvider = "registry.opentofu.org/sponson/fake"
)

// fakeIdentity is the identity ownership gives a fake object: the type has
// no policy entry, so it is identified by its id.
func fakeIdentity(id string) string { return fakeProvider + "|" + fakeType + `|id="` + id + `"` }

// The points where the stand-in can crash, taking the whole run with it:
// before its apply touches anything (the run dies between its checkpoint
// and its receipt, its intents unfulfilled), or right after the state
// write was accepted (its intents fulfilled, its receipt not written).
//
// applyError is no crash but an engine failure: the apply's last action
// fails (a provider error), the engine persists the state of the others and
// exits non-zero, as the real engine does.
const (
	crashBeforeApply  = "engine-before-apply"
	crashAfterPersist = "engine-after-persist"
	applyError        = "engine-apply-error"
)

// fakeCrash is what the stand-in panics with to simulate a crash.
type fakeCrash struct{ at string }

// cloudEvent is one create or delete the cloud saw.
type cloudEvent struct {
	Op, ID, Name, Scope string
}

func (e cloudEvent) String() string { return fmt.Sprintf("%s %s %s(%s)", e.Scope, e.Op, e.ID, e.Name) }

// fakeCloud holds the objects that really exist, shared by every run of one
// property check.
type fakeCloud struct {
	mu        sync.Mutex
	next      int
	objects   map[string]string // id -> name, the objects that exist
	deletedBy map[string]string // id -> scope whose run deleted it
	events    []cloudEvent
	// violations are deletes of objects that did not exist any more (a
	// second owner deleting them) or never existed.
	violations []string
	// beforeDelete, when set, is called before each delete with the scope
	// whose run deletes and the object's id (outside the cloud's mutex);
	// tests check there that the scope owned it.
	beforeDelete func(scope, id string)
	// crashAt, when set (crashBeforeApply or crashAfterPersist), makes the
	// next Apply panic with fakeCrash there; it is reset then.
	crashAt string
}

func newFakeCloud() *fakeCloud {
	return &fakeCloud{objects: map[string]string{}, deletedBy: map[string]string{}}
}

func (c *fakeCloud) create(scope, name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	id := fmt.Sprintf("obj-%d", c.next)
	c.objects[id] = name
	c.events = append(c.events, cloudEvent{"create", id, name, scope})
	return id
}

func (c *fakeCloud) delete(scope, id, name string) {
	c.mu.Lock()
	hook := c.beforeDelete
	c.mu.Unlock()
	if hook != nil {
		hook(scope, id)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, cloudEvent{"delete", id, name, scope})
	if _, ok := c.objects[id]; !ok {
		if by, gone := c.deletedBy[id]; gone {
			c.violations = append(c.violations, fmt.Sprintf("%s deleted %s (%s), which %s had deleted already: it had two owners", scope, id, name, by))
		} else {
			c.violations = append(c.violations, fmt.Sprintf("%s deleted %s (%s), which never existed", scope, id, name))
		}
		return
	}
	delete(c.objects, id)
	c.deletedBy[id] = scope
}

// snapshot returns the objects that exist, id -> name.
func (c *fakeCloud) snapshot() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]string, len(c.objects))
	for id, n := range c.objects {
		out[id] = n
	}
	return out
}

// clone copies the cloud's objects and history; hooks are not copied.
func (c *fakeCloud) clone() *fakeCloud {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := newFakeCloud()
	n.next = c.next
	for id, name := range c.objects {
		n.objects[id] = name
	}
	for id, by := range c.deletedBy {
		n.deletedBy[id] = by
	}
	n.events = append(n.events, c.events...)
	n.violations = append(n.violations, c.violations...)
	return n
}

// crashHere panics with fakeCrash if the cloud was told to crash at this
// point.
func (c *fakeCloud) crashHere(at string) {
	if c.armed(at) {
		panic(fakeCrash{at: at})
	}
}

// armed reports, once, whether the cloud was told to fail at this point.
func (c *fakeCloud) armed(at string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashAt != at {
		return false
	}
	c.crashAt = ""
	return true
}

// setCrash arms (at != "") or disarms a crash of the stand-in.
func (c *fakeCloud) setCrash(at string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.crashAt = at
}

func (c *fakeCloud) eventList() []cloudEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.events)
}

func (c *fakeCloud) violationList() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.violations...)
}

// opener returns an Options.OpenEngine that starts stand-ins on this cloud.
func (c *fakeCloud) opener() func(context.Context, engine.Options) (Engine, error) {
	return func(_ context.Context, o engine.Options) (Engine, error) {
		s := &fakeSession{cloud: c, out: o.Stdout}
		for _, kv := range o.Env {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "TF_HTTP_ADDRESS":
				s.addr = v
			case "TF_HTTP_USERNAME":
				s.user = v
			case "TF_HTTP_PASSWORD":
				s.pass = v
			case runctx.EnvVar:
				var rc runctx.Context
				if err := json.Unmarshal([]byte(v), &rc); err != nil {
					return nil, fmt.Errorf("fake engine: %s: %w", runctx.EnvVar, err)
				}
				s.scope = rc.Scope
			}
		}
		if s.addr == "" || s.scope == "" {
			return nil, fmt.Errorf("fake engine: the run gave no TF_HTTP_ADDRESS or no %s", runctx.EnvVar)
		}
		if s.out == nil {
			s.out = io.Discard
		}
		return s, nil
	}
}

// fakeSession is one run's engine.
type fakeSession struct {
	cloud            *fakeCloud
	out              io.Writer
	scope            string
	addr, user, pass string
}

var _ Engine = (*fakeSession)(nil)

// fakeState is the part of a v4 state the stand-in writes and reads.
type fakeState struct {
	Version   int                 `json:"version"`
	Serial    int                 `json:"serial"`
	Lineage   string              `json:"lineage"`
	Outputs   map[string]any      `json:"outputs"`
	Resources []fakeStateResource `json:"resources"`
}

type fakeStateResource struct {
	Mode      string              `json:"mode"`
	Type      string              `json:"type"`
	Name      string              `json:"name"`
	Provider  string              `json:"provider"`
	Instances []fakeStateInstance `json:"instances"`
}

type fakeStateInstance struct {
	Attributes map[string]any `json:"attributes"`
}

// fakeObject is one object of a state or a plan.
type fakeObject struct {
	Name string `json:"name"`
	ID   string `json:"id"`
}

// fakePlan is the stand-in's saved plan.
type fakePlan struct {
	Serial  int          `json:"serial"`
	Lineage string       `json:"lineage"`
	Destroy bool         `json:"destroy"`
	Creates []string     `json:"creates"`
	Deletes []fakeObject `json:"deletes"`
	Keeps   []fakeObject `json:"keeps"`
}

func (s *fakeSession) Init(context.Context) error                    { return nil }
func (s *fakeSession) SelectWorkspace(context.Context, string) error { return nil }
func (s *fakeSession) Describe() receipt.Engine                      { return receipt.Engine{Name: "fake"} }

func (s *fakeSession) StatePull(ctx context.Context) ([]byte, error) {
	data, err := s.get(ctx)
	return data, engineErr("state pull", err)
}

// StatePush writes state as it is to the state server, as the engine's
// state push does.
func (s *fakeSession) StatePush(ctx context.Context, state []byte) error {
	resp, err := s.request(ctx, http.MethodPost, state)
	if err != nil {
		return engineErr("state push", err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return engineErr("state push", fmt.Errorf("fake engine: HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(msg))))
	}
	return nil
}

// Import adopts the cloud's object id at address fake_object.<name>, as the
// real engine's import does: it fails when the cloud has no such object.
func (s *fakeSession) Import(ctx context.Context, address, id string, _ []engine.VarArg) error {
	name, ok := strings.CutPrefix(address, fakeType+".")
	if !ok || s.cloud.snapshot()[id] != name {
		return engineErr("import", fmt.Errorf("fake engine: no object %s with id %s to import", address, id))
	}
	serial, lineage, have, err := s.current(ctx)
	if err != nil {
		return engineErr("import", err)
	}
	have[name] = id
	return engineErr("import", s.persist(ctx, serial, lineage, have))
}

// StateRm forgets the object at address fake_object.<name>.
func (s *fakeSession) StateRm(ctx context.Context, address string) error {
	serial, lineage, have, err := s.current(ctx)
	if err != nil {
		return engineErr("state rm", err)
	}
	delete(have, strings.TrimPrefix(address, fakeType+"."))
	return engineErr("state rm", s.persist(ctx, serial, lineage, have))
}

func (s *fakeSession) request(ctx context.Context, method string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.addr, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth(s.user, s.pass)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return fakeHTTP.Do(req)
}

// fakeHTTP keeps no idle connections: every run starts and stops its own
// state server, and hundreds of runs would otherwise pile up dead ones.
var fakeHTTP = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}

// get reads the raw state from the state server; nil when there is none.
func (s *fakeSession) get(ctx context.Context) ([]byte, error) {
	resp, err := s.request(ctx, http.MethodGet, nil)
	if err != nil {
		return nil, fmt.Errorf("fake engine: reading the state: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("fake engine: reading the state: %w", err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return data, nil
	case http.StatusNoContent, http.StatusNotFound:
		return nil, nil
	default:
		return nil, fmt.Errorf("fake engine: reading the state: HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(data)))
	}
}

// readFakeState parses a state into its serial, lineage and objects by name.
func readFakeState(data []byte) (serial int, lineage string, objs map[string]string, err error) {
	objs = map[string]string{}
	if len(data) == 0 {
		return 0, "", objs, nil
	}
	var st fakeState
	if err := json.Unmarshal(data, &st); err != nil {
		return 0, "", nil, fmt.Errorf("fake engine: the state does not parse: %w", err)
	}
	for _, r := range st.Resources {
		if r.Mode != "managed" || r.Type != fakeType {
			continue
		}
		for _, in := range r.Instances {
			id, _ := in.Attributes["id"].(string)
			objs[r.Name] = id
		}
	}
	return st.Serial, st.Lineage, objs, nil
}

func (s *fakeSession) current(ctx context.Context) (int, string, map[string]string, error) {
	data, err := s.get(ctx)
	if err != nil {
		return 0, "", nil, err
	}
	return readFakeState(data)
}

// desired reads the configuration from the run's variables.
func desired(vars []engine.VarArg) (map[string]bool, error) {
	want := map[string]bool{}
	for _, v := range vars {
		if v.File {
			return nil, fmt.Errorf("fake engine: -var-file is not supported")
		}
		name, value, _ := strings.Cut(v.Value, "=")
		if name != "objects" {
			return nil, fmt.Errorf("fake engine: undeclared variable %q", name)
		}
		for _, o := range strings.Split(value, ",") {
			if o = strings.TrimSpace(o); o != "" {
				want[o] = true
			}
		}
	}
	return want, nil
}

// engineErr wraps a failure of the stand-in as the real session does.
func engineErr(step string, err error) error {
	if err == nil {
		return nil
	}
	return errcode.Wrap(errcode.EngineFailed, err, "fake %s failed", step).With("step", step)
}

func (s *fakeSession) Plan(ctx context.Context, o engine.PlanOptions) (bool, error) {
	changed, err := s.plan(ctx, o.Out, o.Destroy, o.Vars)
	return changed, engineErr("plan", err)
}

func (s *fakeSession) plan(ctx context.Context, out string, destroy bool, vars []engine.VarArg) (bool, error) {
	want, err := desired(vars)
	if err != nil {
		return false, err
	}
	serial, lineage, have, err := s.current(ctx)
	if err != nil {
		return false, err
	}
	p := fakePlan{Serial: serial, Lineage: lineage, Destroy: destroy, Creates: []string{}, Deletes: []fakeObject{}, Keeps: []fakeObject{}}
	for name, id := range have {
		if destroy || !want[name] {
			p.Deletes = append(p.Deletes, fakeObject{name, id})
		} else {
			p.Keeps = append(p.Keeps, fakeObject{name, id})
		}
	}
	if !destroy {
		for name := range want {
			if _, ok := have[name]; !ok {
				p.Creates = append(p.Creates, name)
			}
		}
	}
	sort.Strings(p.Creates)
	sort.Slice(p.Deletes, func(i, j int) bool { return p.Deletes[i].Name < p.Deletes[j].Name })
	sort.Slice(p.Keeps, func(i, j int) bool { return p.Keeps[i].Name < p.Keeps[j].Name })
	data, err := json.Marshal(p)
	if err != nil {
		return false, err
	}
	if err := os.WriteFile(out, data, 0o600); err != nil {
		return false, err
	}
	return len(p.Creates)+len(p.Deletes) > 0, nil
}

func readPlan(path string) (*fakePlan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p fakePlan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("fake engine: the saved plan does not parse: %w", err)
	}
	return &p, nil
}

func (s *fakeSession) ShowPlan(_ context.Context, path string) (*tfjson.Plan, error) {
	p, err := readPlan(path)
	if err != nil {
		return nil, engineErr("show", err)
	}
	plan := &tfjson.Plan{FormatVersion: "1.2"}
	rc := func(name string, actions tfjson.Actions, before, after, unknown any) *tfjson.ResourceChange {
		return &tfjson.ResourceChange{
			Address: fakeType + "." + name, Mode: tfjson.ManagedResourceMode, Type: fakeType, Name: name,
			ProviderName: fakeProvider,
			Change:       &tfjson.Change{Actions: actions, Before: before, After: after, AfterUnknown: unknown},
		}
	}
	for _, n := range p.Creates {
		plan.ResourceChanges = append(plan.ResourceChanges,
			rc(n, tfjson.Actions{tfjson.ActionCreate}, nil, map[string]any{"name": n}, map[string]any{"id": true}))
	}
	for _, o := range p.Deletes {
		plan.ResourceChanges = append(plan.ResourceChanges,
			rc(o.Name, tfjson.Actions{tfjson.ActionDelete}, map[string]any{"id": o.ID, "name": o.Name}, nil, map[string]any{}))
	}
	for _, o := range p.Keeps {
		vals := map[string]any{"id": o.ID, "name": o.Name}
		plan.ResourceChanges = append(plan.ResourceChanges,
			rc(o.Name, tfjson.Actions{tfjson.ActionNoop}, vals, vals, map[string]any{}))
	}
	sort.Slice(plan.ResourceChanges, func(i, j int) bool { return plan.ResourceChanges[i].Address < plan.ResourceChanges[j].Address })
	return plan, nil
}

func (s *fakeSession) Apply(ctx context.Context, path string) error {
	return engineErr("apply", s.apply(ctx, path))
}

func (s *fakeSession) apply(ctx context.Context, path string) error {
	p, err := readPlan(path)
	if err != nil {
		return err
	}
	serial, lineage, have, err := s.current(ctx)
	if err != nil {
		return err
	}
	// As the real engine: a saved plan is refused when the state moved.
	if serial != p.Serial || lineage != p.Lineage {
		return fmt.Errorf("fake engine: saved plan is stale (state serial %d lineage %q, plan made at %d %q)", serial, lineage, p.Serial, p.Lineage)
	}
	s.cloud.crashHere(crashBeforeApply)
	var failed string
	if s.cloud.armed(applyError) {
		// The last action fails; the others are done and persisted.
		if n := len(p.Creates); n > 0 {
			failed, p.Creates = "creating "+fakeType+"."+p.Creates[n-1], p.Creates[:n-1]
		} else if n := len(p.Deletes); n > 0 {
			failed, p.Deletes = "deleting "+fakeType+"."+p.Deletes[n-1].Name, p.Deletes[:n-1]
		}
	}
	for _, o := range p.Deletes {
		if have[o.Name] == o.ID {
			s.cloud.delete(s.scope, o.ID, o.Name)
			delete(have, o.Name)
		}
	}
	for _, n := range p.Creates {
		have[n] = s.cloud.create(s.scope, n)
	}
	if err := s.persist(ctx, serial, lineage, have); err != nil {
		return err
	}
	if failed != "" {
		return fmt.Errorf("fake engine: Error: %s: the fake provider refused (simulated)", failed)
	}
	fmt.Fprintf(s.out, "fake apply in %s: %d created, %d destroyed\n", s.scope, len(p.Creates), len(p.Deletes))
	s.cloud.crashHere(crashAfterPersist)
	return nil
}

// persist writes the state of the objects have (name -> id) after serial,
// as the real engine's http backend does.
func (s *fakeSession) persist(ctx context.Context, serial int, lineage string, have map[string]string) error {
	if lineage == "" {
		lineage = fmt.Sprintf("lineage-%s-%d", s.scope, time.Now().UnixNano())
	}
	st := fakeState{Version: 4, Serial: serial + 1, Lineage: lineage, Outputs: map[string]any{}, Resources: []fakeStateResource{}}
	names := make([]string, 0, len(have))
	for n := range have {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		st.Resources = append(st.Resources, fakeStateResource{
			Mode: "managed", Type: fakeType, Name: n, Provider: `provider["` + fakeProvider + `"]`,
			Instances: []fakeStateInstance{{Attributes: map[string]any{"id": have[n], "name": n}}},
		})
	}
	body, err := json.Marshal(st)
	if err != nil {
		return err
	}
	resp, err := s.request(ctx, http.MethodPost, body)
	if err != nil {
		return fmt.Errorf("fake engine: Failed to persist state: %w", err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fake engine: Failed to persist state: HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return nil
}
