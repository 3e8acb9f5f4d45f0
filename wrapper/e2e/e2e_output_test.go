package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestE2EOutput: `sponson output` reads a scope's outputs from its state in
// the store, in the engine's -json and -raw forms and for people, without
// the lease and without the engine; another scope's outputs are its own.
func TestE2EOutput(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	dir := h.workdir("testdata/outputs")
	h.mustRun(dir, "apply", "--scope", "pr-1", "-var", "name=one")
	h.mustRun(dir, "apply", "--scope", "pr-2", "-var", "name=two")

	r := h.mustRun(dir, "output", "--scope", "pr-1", "-json")
	var got map[string]struct {
		Sensitive bool `json:"sensitive"`
		Value     any  `json:"value"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("output -json is not JSON: %v\n%s", err, r.stdout)
	}
	want := map[string]any{
		"url":      "https://one.preview.example",
		"replicas": 3.0,
		"settings": map[string]any{"name": "one", "tags": []any{"a", "b"}},
		"token":    "s3cret-one",
	}
	values := map[string]any{}
	for k, v := range got {
		values[k] = v.Value
	}
	if diff := cmp.Diff(want, values); diff != "" {
		t.Errorf("output -json values (-want +got):\n%s", diff)
	}
	if !got["token"].Sensitive || got["url"].Sensitive {
		t.Errorf("sensitivity %+v", got)
	}

	if r := h.mustRun(dir, "output", "--scope", "pr-2", "-raw", "url"); r.stdout != "https://two.preview.example" {
		t.Errorf("output -raw url of pr-2 = %q", r.stdout)
	}
	if r := h.mustRun(dir, "output", "--scope", "pr-1", "-json", "settings"); !strings.Contains(r.stdout, `"tags"`) {
		t.Errorf("output -json settings = %q", r.stdout)
	}
	human := h.mustRun(dir, "output", "--scope", "pr-1").stdout
	if !strings.Contains(human, `url = "https://one.preview.example"`) || !strings.Contains(human, "token = <sensitive>") || strings.Contains(human, "s3cret") {
		t.Errorf("human output:\n%s", human)
	}
	env := h.mustRun(dir, "output", "--scope", "pr-1", "--json").envelope(t)
	if res, _ := env["result"].(map[string]any); res["scope"] != "pr-1" || res["outputs"] == nil {
		t.Errorf("envelope %v", env)
	}

	if r := h.run(dir, nil, "output", "--scope", "pr-1", "--json", "nope"); r.exit != 2 || r.code(t) != "USAGE" {
		t.Errorf("unknown output: exit %d %q", r.exit, r.code(t))
	}
	if r := h.run(dir, nil, "output", "--scope", "pr-1", "--json", "-raw", "settings"); r.exit != 2 || r.code(t) != "USAGE" {
		t.Errorf("-raw of an object: exit %d %q", r.exit, r.code(t))
	}
}
