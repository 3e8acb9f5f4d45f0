package policy_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/policy"
)

// plan is a plan JSON as `show -json` prints it, cut to what the policies
// read: a local_file created outside the allowed directory, a
// terraform_data deleted.
const plan = `{
  "format_version": "1.2",
  "resource_changes": [
    {"address": "local_file.out", "type": "local_file", "change": {"actions": ["create"], "after": {"filename": "/etc/out.txt"}}},
    {"address": "terraform_data.old", "type": "terraform_data", "change": {"actions": ["delete"], "after": null}}
  ]
}`

// Conftest's own example, in Rego v1: deny a local_file outside /srv/allowed.
const filenameV1 = `package main

deny contains msg if {
	rc := input.resource_changes[_]
	rc.type == "local_file"
	not startswith(rc.change.after.filename, "/srv/allowed/")
	msg := sprintf("%s writes %s, outside /srv/allowed", [rc.address, rc.change.after.filename])
}
`

// The same in the Rego v0 syntax of conftest policies written before
// OPA 1.0.
const filenameV0 = `package main

deny[msg] {
	rc := input.resource_changes[_]
	rc.type == "local_file"
	not startswith(rc.change.after.filename, "/srv/allowed/")
	msg := sprintf("%s writes %s, outside /srv/allowed", [rc.address, rc.change.after.filename])
}
`

// Deletes in production, as objects with msg and details, read from
// data.sponson.
const noDeletes = `package main

violation contains {"msg": msg, "details": {"address": rc.address}} if {
	data.sponson.environment == "production"
	rc := input.resource_changes[_]
	rc.change.actions[_] == "delete"
	msg := sprintf("%s would be deleted in production (owned by %s)", [rc.address, data.sponson.owners[rc.address]])
}

warn_pr contains msg if {
	data.sponson.pull_request > 0
	msg := sprintf("pr %d by %s in %s/%s", [data.sponson.pull_request, data.sponson.actor, data.sponson.stack, data.sponson.scope])
}
`

const boolWarn = `package main

warn if { count(input.resource_changes) > 1 }
deny_never if { false }
`

const otherPackage = `package other

deny contains "not read: another namespace"
`

func TestEval(t *testing.T) {
	t.Parallel()
	prod := policy.Context{Environment: "production", Scope: "main", Stack: "acme/app", PullRequest: 7, Actor: "alice", RunID: "run-1",
		Owners: map[string]string{"terraform_data.old": "main"}}
	outside := policy.Message{Policy: "policy/file.rego", Rule: "deny", Msg: "local_file.out writes /etc/out.txt, outside /srv/allowed"}
	tests := map[string]struct {
		files map[string]string
		paths []string
		sctx  policy.Context
		want  policy.Verdict
	}{
		"strings, v1": {
			files: map[string]string{"policy/file.rego": filenameV1},
			paths: []string{"policy"},
			want:  policy.Verdict{Deny: []policy.Message{outside}},
		},
		"strings, v0": {
			files: map[string]string{"policy/file.rego": filenameV0},
			paths: []string{"policy/file.rego"},
			want:  policy.Verdict{Deny: []policy.Message{outside}},
		},
		"objects with msg and details, data.sponson": {
			files: map[string]string{"p/deletes.rego": noDeletes},
			paths: []string{"p"},
			sctx:  prod,
			want: policy.Verdict{
				Deny: []policy.Message{{Policy: "p/deletes.rego", Rule: "violation", Msg: "terraform_data.old would be deleted in production (owned by main)",
					Details: map[string]any{"address": "terraform_data.old"}}},
				Warn: []policy.Message{{Policy: "p/deletes.rego", Rule: "warn_pr", Msg: "pr 7 by alice in acme/app/main"}},
			},
		},
		"another environment": {
			files: map[string]string{"p/deletes.rego": noDeletes},
			paths: []string{"p"},
			sctx:  policy.Context{Environment: "preview"},
		},
		"boolean rules": {
			files: map[string]string{"b.rego": boolWarn},
			paths: []string{"b.rego"},
			want:  policy.Verdict{Warn: []policy.Message{{Policy: "b.rego", Rule: "warn", Msg: "warn"}}},
		},
		"other namespaces and tests are not evaluated": {
			files: map[string]string{"p/other.rego": otherPackage, "p/file.rego": filenameV1, "p/file_test.rego": "package main\n\ntest_x if { true }\n"},
			paths: []string{"p"},
			want:  policy.Verdict{Deny: []policy.Message{{Policy: "p/file.rego", Rule: "deny", Msg: outside.Msg}}},
		},
		"two files add to one rule": {
			files: map[string]string{"p/a.rego": filenameV1, "p/b.rego": "package main\n\ndeny contains \"always\"\n"},
			paths: []string{"p"},
			want: policy.Verdict{Deny: []policy.Message{
				{Policy: "p/a.rego, p/b.rego", Rule: "deny", Msg: "always"},
				{Policy: "p/a.rego, p/b.rego", Rule: "deny", Msg: outside.Msg},
			}},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			set, err := policy.Load(context.Background(), fsOf(tt.files), tt.paths)
			if err != nil {
				t.Fatal(err)
			}
			got, err := set.Eval(context.Background(), []byte(plan), tt.sctx)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("verdict (-want +got):\n%s", d)
			}
			if got.Denied() != (len(tt.want.Deny) > 0) {
				t.Errorf("Denied() = %v", got.Denied())
			}
		})
	}
}

// TestEvalOnce checks that the context of one evaluation does not leak
// into the next (data.sponson lives in a transaction that is never
// committed).
func TestEvalOnce(t *testing.T) {
	t.Parallel()
	set, err := policy.Load(context.Background(), fsOf(map[string]string{"p.rego": noDeletes}), []string{"p.rego"})
	if err != nil {
		t.Fatal(err)
	}
	for i, env := range []string{"production", "preview", "production"} {
		v, err := set.Eval(context.Background(), []byte(plan), policy.Context{Environment: env, Owners: map[string]string{"terraform_data.old": "main"}})
		if err != nil {
			t.Fatal(err)
		}
		if v.Denied() != (env == "production") {
			t.Errorf("evaluation %d in %s: denied %v", i, env, v.Denied())
		}
	}
}

func TestLoadRefuses(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		files map[string]string
		paths []string
		want  []string
	}{
		"syntax": {
			files: map[string]string{"p/bad.rego": "package main\n\ndeny contains msg if {\n\tmsg := \n}\n"},
			paths: []string{"p"},
			want:  []string{"p/bad.rego:"},
		},
		"compile (unsafe variable)": {
			files: map[string]string{"p/unsafe.rego": "package main\n\ndeny contains msg if {\n\tx == 1\n\tmsg := \"m\"\n}\n"},
			paths: []string{"p"},
			want:  []string{"p/unsafe.rego:4", "unsafe"},
		},
		"missing path": {
			files: map[string]string{"p/a.rego": filenameV1},
			paths: []string{"policies"},
			want:  []string{`"policies"`},
		},
		"outside the directory": {
			files: map[string]string{"p/a.rego": filenameV1},
			paths: []string{"../p"},
			want:  []string{"leaves the directory"},
		},
		"no rego": {
			files: map[string]string{"p/readme.md": "x"},
			paths: []string{"p"},
			want:  []string{"no .rego file"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := policy.Load(context.Background(), fsOf(tt.files), tt.paths)
			if err == nil {
				t.Fatal("loaded")
			}
			e := errcode.As(err)
			if e.Code != errcode.Usage {
				t.Errorf("code %s, want USAGE: %v", e.Code, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(e.Message, w) {
					t.Errorf("message %q lacks %q", e.Message, w)
				}
			}
		})
	}
}

// TestEvalError checks that a policy that fails at evaluation refuses
// (POLICY_DENIED), never passes as an empty verdict.
func TestEvalError(t *testing.T) {
	t.Parallel()
	src := "package main\n\ndeny contains msg if {\n\tmsg := sprintf(\"%d\", [to_number(\"not a number\")])\n}\n"
	set, err := policy.Load(context.Background(), fsOf(map[string]string{"e.rego": src}), []string{"e.rego"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = set.Eval(context.Background(), []byte(plan), policy.Context{})
	if e := errcode.As(err); err == nil || e.Code != errcode.PolicyDenied {
		t.Fatalf("error %v, want POLICY_DENIED", err)
	}
}

func TestTest(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"p/file.rego": filenameV1,
		"p/file_test.rego": `package main

test_outside_denied if {
	count(deny) == 1 with input as {"resource_changes": [{"address": "local_file.a", "type": "local_file", "change": {"after": {"filename": "/tmp/a"}}}]}
}

test_inside_allowed_wrongly if {
	count(deny) == 1 with input as {"resource_changes": [{"address": "local_file.a", "type": "local_file", "change": {"after": {"filename": "/srv/allowed/a"}}}]}
}
`,
	}
	set, err := policy.Load(context.Background(), fsOf(files), []string{"p"})
	if err != nil {
		t.Fatal(err)
	}
	passed, failed, err := set.Test(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if passed != 1 || len(failed) != 1 || !strings.Contains(failed[0], "test_inside_allowed_wrongly") {
		t.Errorf("passed %d, failed %q", passed, failed)
	}
}

func fsOf(files map[string]string) fstest.MapFS {
	m := fstest.MapFS{}
	for k, v := range files {
		m[k] = &fstest.MapFile{Data: []byte(v)}
	}
	return m
}
