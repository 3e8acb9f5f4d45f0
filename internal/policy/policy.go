// Package policy evaluates an environment's Rego policies on the engine's
// plan JSON, with OPA's own Go library embedded (docs/design.md §2.19
// Policies): the conventions of conftest, so that a team's conftest
// policies run unchanged.
//
//   - The rules are in package main (conftest's default namespace): deny and
//     violation refuse, warn is shown. A rule may also carry a suffix
//     (deny_public_bucket), as conftest allows.
//   - A rule is a set (or an array) of strings, or of objects with msg
//     (violation objects may carry details), or a boolean: true is one
//     message naming the rule.
//   - input is the engine's plan JSON exactly as `show -json` prints it.
//   - Sponson's context is OPA data under data.sponson (environment, scope,
//     stack, pull_request, actor, run_id, owners), so that input stays the
//     plan and a policy written for conftest reads it where it always did.
//
// Policies are declared in the trusted sponson.hcl (`policies = ["policy"]`:
// .rego files or directories of them, at the top or per environment);
// `sponson policy test --policy PATH PLAN` evaluates them locally.
package policy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// Namespace is the package the rules are read from: conftest's default.
const Namespace = "main"

// The rule kinds. Deny and Violation refuse; Warn is shown.
const (
	Deny      = "deny"
	Violation = "violation"
	Warn      = "warn"
)

// ruleName matches conftest's rule names: a kind, optionally followed by
// an underscore and a suffix.
var ruleName = regexp.MustCompile(`^(deny|violation|warn)(_[A-Za-z0-9_]+)?$`)

// Context is sponson's context of a run, given to the policies as
// data.sponson.
type Context struct {
	Environment string `json:"environment"`
	Scope       string `json:"scope"`
	Stack       string `json:"stack"`
	PullRequest int    `json:"pull_request"`
	Actor       string `json:"actor"`
	RunID       string `json:"run_id"`
	// Owners maps the address of every object the plan touches that a
	// scope already owns to that scope (this run's own scope for the
	// objects it owns); an object the plan creates new is absent.
	Owners map[string]string `json:"owners"`
}

// Message is one message of a rule.
type Message struct {
	// Policy is the file (relative to the directory the policies were
	// declared in) that defines the rule; several, comma-separated, when
	// more than one file adds to the same rule.
	Policy string `json:"policy"`
	// Rule is the rule's name: deny, violation or warn, or one of them
	// with a suffix.
	Rule string `json:"rule"`
	Msg  string `json:"msg"`
	// Details are what a violation object carries besides msg.
	Details any `json:"details,omitempty"`
}

// Verdict is what the policies say of one plan.
type Verdict struct {
	Deny []Message `json:"deny,omitempty"`
	Warn []Message `json:"warn,omitempty"`
}

// Denied reports whether a rule refuses the plan.
func (v Verdict) Denied() bool { return len(v.Deny) > 0 }

// Set is a compiled set of policies, ready to evaluate.
type Set struct {
	// Files are the policy files, in order.
	Files []string
	// Digest is the SHA-256 of every file read, tests included, by name
	// and contents: two sets with the same digest are the same policies.
	Digest   string
	modules  map[string]*ast.Module
	tests    map[string]*ast.Module
	compiler *ast.Compiler
	// rules are the rule names of the namespace and the files defining
	// each.
	rules map[string][]string
	query rego.PreparedEvalQuery
	store storage.Store
}

// Load reads the .rego files at paths in fsys (each a file or a
// directory, read recursively) and compiles them. fsys is rooted at the
// directory of the sponson.hcl that declared them. *_test.rego files are
// kept for Test and left out of evaluation. A file that does not parse or
// compile is refused with USAGE naming the file and the line.
func Load(ctx context.Context, fsys fs.FS, paths []string) (*Set, error) {
	files, err := regoFiles(fsys, paths)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, errcode.New(errcode.Usage, "the policies %s hold no .rego file", strings.Join(paths, ", ")).
			WithHint("Point `policies` in sponson.hcl at .rego files or directories that hold them.")
	}
	s := &Set{modules: map[string]*ast.Module{}, tests: map[string]*ast.Module{}, rules: map[string][]string{}}
	h := sha256.New()
	for _, name := range files {
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, errcode.Wrap(errcode.Usage, err, "reading the policy %s", name)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(src))
		h.Write(src)
		m, err := parse(name, src)
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(name, "_test.rego") {
			s.tests[name] = m
			continue
		}
		s.Files = append(s.Files, name)
		s.modules[name] = m
		if m.Package.Path.String() != "data."+Namespace {
			continue
		}
		for _, r := range m.Rules {
			n := r.Head.Name.String()
			if len(r.Head.Reference) > 0 {
				n = r.Head.Reference[0].Value.String()
				if len(r.Head.Reference) > 1 {
					// deny.x.y := ... is not a rule conftest reads.
					continue
				}
			}
			if ruleName.MatchString(n) && !contains(s.rules[n], name) {
				s.rules[n] = append(s.rules[n], name)
			}
		}
	}
	s.Digest = hex.EncodeToString(h.Sum(nil))
	if len(s.modules) == 0 {
		return nil, errcode.New(errcode.Usage, "the policies %s hold only tests (*_test.rego)", strings.Join(paths, ", ")).
			WithHint("Add the policies the tests test.")
	}
	s.compiler = ast.NewCompiler().WithEnablePrintStatements(false)
	if s.compiler.Compile(s.modules); s.compiler.Failed() {
		return nil, compileError(s.compiler.Errors)
	}
	q, err := s.prepare(ctx)
	if err != nil {
		return nil, err
	}
	s.query = q
	return s, nil
}

// prepare builds the one query that evaluates every rule of the namespace
// at once: an object of each rule's value, a rule that has none for this
// input (a boolean rule that is false) left out instead of making the
// whole query undefined.
func (s *Set) prepare(ctx context.Context) (rego.PreparedEvalQuery, error) {
	q := "x = {}"
	if names := s.ruleNames(); len(names) > 0 {
		objs := make([]string, len(names))
		for i, n := range names {
			objs[i] = fmt.Sprintf("{%q: v | v := data.%s.%s}", n, Namespace, n)
		}
		q = "x = object.union_n([" + strings.Join(objs, ", ") + "])"
	}
	s.store = inmem.New()
	r := rego.New(rego.Query(q), rego.Compiler(s.compiler), rego.Store(s.store), rego.StrictBuiltinErrors(true))
	pq, err := r.PrepareForEval(ctx)
	if err != nil {
		return rego.PreparedEvalQuery{}, errcode.Wrap(errcode.Usage, err, "preparing the policies")
	}
	return pq, nil
}

func (s *Set) ruleNames() []string {
	names := make([]string, 0, len(s.rules))
	for n := range s.rules {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Eval evaluates the policies on planJSON (the engine's plan JSON, as
// `show -json` prints it) with sctx as data.sponson. An error of the
// evaluation itself (a builtin's, a conflict) is an error, never an empty
// verdict: a policy that cannot be evaluated refuses nothing silently.
func (s *Set) Eval(ctx context.Context, planJSON []byte, sctx Context) (Verdict, error) {
	input, err := decode(planJSON)
	if err != nil {
		return Verdict{}, errcode.Wrap(errcode.Internal, err, "reading the plan JSON for the policies")
	}
	data, err := contextData(sctx)
	if err != nil {
		return Verdict{}, err
	}
	// data.sponson is written in a transaction of this evaluation alone,
	// never committed: the prepared query serves every evaluation.
	txn, err := s.store.NewTransaction(ctx, storage.WriteParams)
	if err != nil {
		return Verdict{}, errcode.Wrap(errcode.Internal, err, "opening the policies' data")
	}
	defer s.store.Abort(ctx, txn)
	if err := s.store.Write(ctx, txn, storage.AddOp, storage.Path{"sponson"}, data); err != nil {
		return Verdict{}, errcode.Wrap(errcode.Internal, err, "writing the policies' context")
	}
	rs, err := s.query.Eval(ctx, rego.EvalParsedInput(input), rego.EvalTransaction(txn))
	if err != nil {
		return Verdict{}, errcode.Wrap(errcode.PolicyDenied, err, "evaluating the policies").
			WithHint("Fix the policy the error names (`sponson policy test` runs it on a plan JSON file), or the plan it cannot read.")
	}
	var v Verdict
	if len(rs) == 0 || len(rs[0].Bindings) == 0 {
		return v, nil
	}
	got, _ := rs[0].Bindings["x"].(map[string]any)
	for _, n := range s.ruleNames() {
		val, ok := got[n]
		if !ok {
			continue
		}
		msgs := messages(n, strings.Join(s.rules[n], ", "), val)
		if strings.HasPrefix(n, Warn) {
			v.Warn = append(v.Warn, msgs...)
		} else {
			v.Deny = append(v.Deny, msgs...)
		}
	}
	return v, nil
}

// messages turns a rule's value into its messages, as conftest reads it.
func messages(rule, file string, val any) []Message {
	var out []Message
	add := func(e any) {
		switch e := e.(type) {
		case string:
			out = append(out, Message{Policy: file, Rule: rule, Msg: e})
		case map[string]any:
			m := Message{Policy: file, Rule: rule}
			if s, ok := e["msg"].(string); ok {
				m.Msg = s
			} else {
				b, _ := json.Marshal(e)
				m.Msg = string(b)
			}
			if d, ok := e["details"]; ok {
				m.Details = d
			}
			out = append(out, m)
		default:
			b, _ := json.Marshal(e)
			out = append(out, Message{Policy: file, Rule: rule, Msg: string(b)})
		}
	}
	switch val := val.(type) {
	case bool:
		if val {
			out = append(out, Message{Policy: file, Rule: rule, Msg: rule})
		}
	case []any:
		for _, e := range val {
			add(e)
		}
	case string, map[string]any:
		add(val)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Msg < out[j].Msg })
	return out
}

// Test runs the OPA tests of the *_test.rego files, as `opa test` does: each
// test_ rule passes when it is true. It returns how many passed and one line
// per failed test; no test file, no test. (OPA's tester package would link
// the testing package into sponson; this is the part of it sponson needs.)
func (s *Set) Test(ctx context.Context) (passed int, failed []string, err error) {
	if len(s.tests) == 0 {
		return 0, nil, nil
	}
	mods := map[string]*ast.Module{}
	for k, m := range s.modules {
		mods[k] = m
	}
	type test struct{ ref, file string }
	var tests []test
	seen := map[string]bool{}
	for k, m := range s.tests {
		mods[k] = m
		for _, r := range m.Rules {
			n := r.Head.Name.String()
			if len(r.Head.Reference) > 0 {
				n = r.Head.Reference[0].Value.String()
			}
			ref := m.Package.Path.String() + "." + n
			if strings.HasPrefix(n, "test_") && !seen[ref] {
				seen[ref] = true
				tests = append(tests, test{ref: ref, file: k})
			}
		}
	}
	sort.Slice(tests, func(i, j int) bool { return tests[i].ref < tests[j].ref })
	c := ast.NewCompiler()
	if c.Compile(mods); c.Failed() {
		return 0, nil, compileError(c.Errors)
	}
	for _, t := range tests {
		rs, err := rego.New(rego.Query(t.ref), rego.Compiler(c), rego.Store(inmem.New())).Eval(ctx)
		switch {
		case err != nil:
			failed = append(failed, fmt.Sprintf("%s: %s: error: %v", t.file, t.ref, err))
		case len(rs) == 1 && len(rs[0].Expressions) == 1 && rs[0].Expressions[0].Value == true:
			passed++
		default:
			failed = append(failed, fmt.Sprintf("%s: %s: failed", t.file, t.ref))
		}
	}
	return passed, failed, nil
}

// regoFiles lists the .rego files at paths, sorted.
func regoFiles(fsys fs.FS, paths []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		p = path.Clean(strings.TrimPrefix(p, "./"))
		if !fs.ValidPath(p) {
			return nil, errcode.New(errcode.Usage, "the policy path %q leaves the directory of sponson.hcl", p).
				WithHint("Name policies by paths inside the directory of sponson.hcl, such as \"policy\".")
		}
		info, err := fs.Stat(fsys, p)
		if err != nil {
			return nil, errcode.Wrap(errcode.Usage, err, "the policy path %q", p).
				WithHint("Commit the policy files sponson.hcl names, or correct `policies` in sponson.hcl.")
		}
		if !info.IsDir() {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
			continue
		}
		err = fs.WalkDir(fsys, p, func(name string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(name, ".rego") && !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
			return nil
		})
		if err != nil {
			return nil, errcode.Wrap(errcode.Usage, err, "reading the policy directory %q", p)
		}
	}
	sort.Strings(out)
	return out, nil
}

// parse parses a module as Rego v1, else as Rego v0 (the syntax of
// conftest policies written before OPA 1.0: deny[msg] { ... }); when
// neither parses it reports v1's error, file and line.
func parse(name string, src []byte) (*ast.Module, error) {
	m, err := ast.ParseModuleWithOpts(name, string(src), ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err == nil {
		return m, nil
	}
	if m0, err0 := ast.ParseModuleWithOpts(name, string(src), ast.ParserOptions{RegoVersion: ast.RegoV0}); err0 == nil {
		return m0, nil
	}
	return nil, compileError(err)
}

// compileError is USAGE naming each error's file and line.
func compileError(err error) error {
	var lines []string
	var errs ast.Errors
	switch e := err.(type) {
	case ast.Errors:
		errs = e
	default:
		return errcode.New(errcode.Usage, "the policies do not compile: %v", err).
			WithHint("Fix the policy; `sponson policy test` compiles it locally.")
	}
	for _, e := range errs {
		where := "?"
		if e.Location != nil {
			where = fmt.Sprintf("%s:%d", e.Location.File, e.Location.Row)
		}
		lines = append(lines, fmt.Sprintf("%s: %s", where, e.Message))
	}
	return errcode.New(errcode.Usage, "the policies do not compile: %s", strings.Join(lines, "; ")).
		WithHint("Fix the policy at the file and line named; `sponson policy test` compiles it locally.")
}

// decode reads JSON as OPA's value, numbers kept exact.
func decode(b []byte) (ast.Value, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return ast.InterfaceToValue(v)
}

func contextData(sctx Context) (any, error) {
	if sctx.Owners == nil {
		sctx.Owners = map[string]string{}
	}
	b, err := json.Marshal(sctx)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "encoding the policies' context")
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "encoding the policies' context")
	}
	return v, nil
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
