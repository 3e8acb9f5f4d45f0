package environments

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

const sample = `
environment "preview" {}

environment "Staging" {}

environment "prod" {
  protected = true
  approvers = ["alice", " bob "]
}

environment "production" {
  protected = true
}
`

func TestParse(t *testing.T) {
	t.Parallel()
	d, err := Parse([]byte(sample), "sponson.hcl")
	if err != nil {
		t.Fatal(err)
	}
	want := Declared{Source: "sponson.hcl", Environments: []Environment{
		{Name: "preview"},
		{Name: "staging"},
		{Name: "prod", Protected: true, Approvers: []string{"alice", "bob"}},
		{Name: "production", Protected: true},
	}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ src, want string }{
		"not HCL":                 {`environment "a" {`, "sponson.hcl:1"},
		"no environment":          {``, "no environment is declared"},
		"unknown setting":         {`stage = "x"`, "Unsupported argument"},
		"unknown block":           {`scope "x" {}`, "Unsupported block"},
		"unknown attribute":       {`environment "a" { owner = "x" }`, "Unsupported argument"},
		"twice after case":        {`environment "QA" {}` + "\n" + `environment "qa" {}`, "declared twice"},
		"invalid name":            {`environment "../x" {}`, "invalid environment name"},
		"approvers, unprotected":  {`environment "a" { approvers = ["x"] }`, "not protected"},
		"no approvers":            {`environment "a" {` + "\n" + `protected = true` + "\n" + `approvers = [" "]` + "\n}", "no approvers"},
		"production unprotected":  {`environment "production" { protected = false }`, "always protected"},
		"protected not a boolean": {`environment "a" { protected = "maybe" }`, "a bool is required"},
		"identity by nothing":     {`environment "a" { identity = { local_file = [] } }`, "lists no attribute"},
		"identity blank":          {"identity = { local_file = [\" \"] }\nenvironment \"a\" {}", "blank attribute"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.src), "sponson.hcl")
			e := errcode.As(err)
			if e == nil || e.Code != errcode.Usage || !strings.Contains(e.Message, tc.want) {
				t.Fatalf("Parse(%q) error = %v, want USAGE mentioning %q", tc.src, err, tc.want)
			}
		})
	}
}

// An identity declared for all environments applies to each; one declared
// in an environment wins for the types it names.
func TestParseIdentity(t *testing.T) {
	t.Parallel()
	d, err := Parse([]byte(`
identity = { local_file = ["filename"], fixture_object = ["name"] }
address_owned = ["acme_render"]
environment "preview" {
  address_owned = ["acme_stamp", "acme_render"]
}
environment "production" {
  identity = { local_file = ["filename", "content"] }
}
`), "sponson.hcl")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string][]string{
		"preview":    {"local_file": {"filename"}, "fixture_object": {"name"}},
		"production": {"local_file": {"filename", "content"}, "fixture_object": {"name"}},
	}
	for _, e := range d.Environments {
		if diff := cmp.Diff(want[e.Name], e.Identity); diff != "" {
			t.Errorf("identity of %s (-want +got):\n%s", e.Name, diff)
		}
	}
	owned := map[string][]string{"preview": {"acme_render", "acme_stamp"}, "production": {"acme_render"}}
	for _, e := range d.Environments {
		if diff := cmp.Diff(owned[e.Name], e.AddressOwned); diff != "" {
			t.Errorf("address_owned of %s (-want +got):\n%s", e.Name, diff)
		}
	}
}

func TestProductionIsAlwaysProtected(t *testing.T) {
	t.Parallel()
	d, err := Parse([]byte(`environment "Production" {}`), "sponson.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := d.Lookup("production"); !e.Protected {
		t.Errorf("production declared without protected is %+v, want protected", e)
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	d, err := Parse([]byte(sample), "/repo/sponson.hcl")
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"preview": "preview", "Staging": "staging", "STAGING": "staging", " prod ": "prod", "Production": "production",
	} {
		e, err := d.Lookup(in)
		if err != nil || e.Name != want {
			t.Errorf("Lookup(%q) = %+v, %v; want %s", in, e, err, want)
		}
	}
	for _, in := range []string{"production-app", "prd", "stag", "preview2", ""} {
		_, err := d.Lookup(in)
		e := errcode.As(err)
		if e == nil || e.Code != errcode.EnvUndeclared {
			t.Fatalf("Lookup(%q) error = %v, want ENV_UNDECLARED", in, err)
		}
		for _, name := range []string{"preview", "staging", "prod", "production", "/repo/sponson.hcl"} {
			if !strings.Contains(e.Message, name) {
				t.Errorf("Lookup(%q): message %q does not name %s", in, e.Message, name)
			}
		}
		if errcode.Lookup(e.Code).Exit != errcode.ExitRefused {
			t.Errorf("ENV_UNDECLARED exits %d, want 2", errcode.Lookup(e.Code).Exit)
		}
	}
}

func TestDefault(t *testing.T) {
	t.Parallel()
	d := Default()
	if e, err := d.Lookup("Production"); err != nil || !e.Protected || e.Approvers != nil {
		t.Errorf("default production = %+v, %v; want protected, any approver", e, err)
	}
	if e, err := d.Lookup("preview"); err != nil || e.Protected {
		t.Errorf("default preview = %+v, %v; want unprotected", e, err)
	}
	_, err := d.Lookup("prod")
	if e := errcode.As(err); e == nil || e.Code != errcode.EnvUndeclared || !strings.Contains(e.Message, "preview, production") {
		t.Errorf("default prod: %v", err)
	}
}

func TestApprove(t *testing.T) {
	t.Parallel()
	open := Environment{Name: "preview"}
	anyone := Environment{Name: "production", Protected: true}
	listed := Environment{Name: "prod", Protected: true, Approvers: []string{"alice"}}
	for _, tc := range []struct {
		env      Environment
		approver string
		want     string
		wantErr  bool
	}{
		{open, "", "", false},
		{open, " ada ", "ada", false},
		{anyone, "", "", true},
		{anyone, "  ", "", true},
		{anyone, " ada ", "ada", false},
		{listed, "alice", "alice", false},
		{listed, "mallory", "", true},
		{listed, "", "", true},
	} {
		got, err := tc.env.Approve(tc.approver)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("%s.Approve(%q) = %q, %v; want %q, error %v", tc.env.Name, tc.approver, got, err, tc.want, tc.wantErr)
		}
		if err != nil && !errcode.Is(err, errcode.EnvNotApproved) {
			t.Errorf("%s.Approve(%q) error %v, want ENV_NOT_APPROVED", tc.env.Name, tc.approver, err)
		}
	}
}

// TestLoad checks where the file is looked for: the configuration
// directory, then parents up to the repository's root, and no further.
func TestLoad(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(path, src string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// outside/sponson.hcl is above the repository and must not be read.
	write(filepath.Join(root, FileName), `environment "outside" {}`)
	repo := filepath.Join(root, "repo")
	write(filepath.Join(repo, ".git", "HEAD"), "ref: refs/heads/main\n")
	stack := filepath.Join(repo, "stacks", "app")
	if err := os.MkdirAll(stack, 0o755); err != nil {
		t.Fatal(err)
	}

	if d, err := Load(stack); err != nil || d.Source != "" {
		t.Fatalf("Load without a file in the repository = %+v, %v; want the defaults", d, err)
	}
	write(filepath.Join(repo, FileName), `environment "qa" {}`)
	if d, err := Load(stack); err != nil || d.Source != filepath.Join(repo, FileName) || d.Names()[0] != "qa" {
		t.Fatalf("Load from the repository root = %+v, %v", d, err)
	}
	write(filepath.Join(stack, FileName), `environment "local" {}`)
	if d, err := Load(stack); err != nil || d.Names()[0] != "local" {
		t.Fatalf("Load of the nearest file = %+v, %v", d, err)
	}
	if d, err := Load(root); err != nil || d.Names()[0] != "outside" {
		t.Fatalf("Load outside any repository = %+v, %v", d, err)
	}
	write(filepath.Join(stack, FileName), `environment {}`)
	if _, err := Load(stack); !errcode.Is(err, errcode.Usage) {
		t.Fatalf("Load of a bad file: %v, want USAGE", err)
	}
}
