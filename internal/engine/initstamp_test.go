package engine

import (
	"os"
	"path/filepath"
	"testing"
)

// TestInitStampChangesWithTheConfiguration: every input of "initialised for
// this configuration" changes the stamp, and nothing else does.
func TestInitStampChangesWithTheConfiguration(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	write := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	stamp := func(extra ...string) string {
		t.Helper()
		s, err := InitStamp(dir, data, extra...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	write(filepath.Join(dir, "main.tf"), `resource "terraform_data" "a" {}`)
	write(filepath.Join(dir, "README.md"), "not configuration")
	base := stamp("tofu")
	if again := stamp("tofu"); again != base {
		t.Fatalf("the stamp of an unchanged configuration changed: %s, then %s", base, again)
	}
	write(filepath.Join(dir, "README.md"), "still not configuration")
	if s := stamp("tofu"); s != base {
		t.Fatal("a file that is not configuration changed the stamp")
	}

	steps := []struct {
		name   string
		change func()
		extra  string
	}{
		{"root module", func() { write(filepath.Join(dir, "main.tf"), `module "m" { source = "./m" }`) }, "tofu"},
		{"lock file", func() { write(filepath.Join(dir, ".terraform.lock.hcl"), `provider "x" {}`) }, "tofu"},
		{"backend", func() { write(filepath.Join(data, "terraform.tfstate"), `{"backend":{"hash":1}}`) }, "tofu"},
		{"module manifest", func() {
			write(filepath.Join(data, "modules", "modules.json"), `{"Modules":[{"Key":"","Dir":"."},{"Key":"m","Dir":"m"}]}`)
		}, "tofu"},
		{"a module's files", func() { write(filepath.Join(dir, "m", "main.tf"), `terraform { required_providers { x = {} } }`) }, "tofu"},
		{"the same module edited", func() { write(filepath.Join(dir, "m", "main.tf"), `terraform { required_providers { y = {} } }`) }, "tofu"},
		{"extra (engine, CLI configuration)", func() {}, "terraform"},
	}
	prev := base
	for _, s := range steps {
		s.change()
		got := stamp(s.extra)
		if got == prev {
			t.Errorf("changing the %s left the stamp as it was", s.name)
		}
		prev = got
	}

	if InitCurrent(data, prev) {
		t.Fatal("a data directory never stamped counts as initialised")
	}
	if err := RecordInit(data, prev); err != nil {
		t.Fatal(err)
	}
	if !InitCurrent(data, prev) || InitCurrent(data, base) {
		t.Fatal("InitCurrent does not compare with the recorded stamp")
	}
	if err := ForgetInit(data); err != nil || InitCurrent(data, prev) {
		t.Fatalf("ForgetInit left the stamp (%v)", err)
	}
}

// TestCopyInit: a copied data directory has the source's stamp and its own
// files (hard links: replacing one side's file leaves the other's), keeps
// symbolic links as links, and a manifest naming a module installed inside
// the source is refused.
func TestCopyInit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, dst := filepath.Join(dir, ".terraform", "s", "a"), filepath.Join(dir, ".terraform", "s", "b")
	write := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "main.tf"), `module "m" { source = "./m" }`)
	write(filepath.Join(dir, "m", "main.tf"), `resource "terraform_data" "a" {}`)
	write(filepath.Join(src, "terraform.tfstate"), `{"backend":{"type":"http"}}`)
	write(filepath.Join(src, "providers", "example.com", "x", "1.0.0", "linux_amd64", "terraform-provider-x"), "binary")
	if err := os.Symlink("/elsewhere", filepath.Join(src, "providers", "cached")); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(src, "modules", "modules.json"), `{"Modules":[{"Key":"","Dir":"."},{"Key":"m","Dir":"m"}]}`)
	want, err := InitStamp(dir, src, "extra")
	if err != nil {
		t.Fatal(err)
	}
	if err := CopyInit(dir, src, dst); err != nil {
		t.Fatal(err)
	}
	if got, err := InitStamp(dir, dst, "extra"); err != nil || got != want {
		t.Fatalf("the copy's stamp is %q (%v), want the source's %q", got, err, want)
	}
	bin := filepath.Join("providers", "example.com", "x", "1.0.0", "linux_amd64", "terraform-provider-x")
	write(filepath.Join(src, bin+".new"), "new binary")
	if err := os.Rename(filepath.Join(src, bin+".new"), filepath.Join(src, bin)); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, bin)); err != nil || string(b) != "binary" {
		t.Fatalf("the copy's provider = %q, %v after the source's was replaced", b, err)
	}
	if link, err := os.Readlink(filepath.Join(dst, "providers", "cached")); err != nil || link != "/elsewhere" {
		t.Fatalf("the copy's link = %q, %v", link, err)
	}

	write(filepath.Join(src, "modules", "modules.json"), `{"Modules":[{"Key":"r","Dir":".terraform/s/a/modules/r"}]}`)
	if err := CopyInit(dir, src, filepath.Join(dir, ".terraform", "s", "c")); err == nil {
		t.Fatal("CopyInit took over a module installed inside the source")
	}
	// Inside the source too, under a directory whose name begins with "..".
	write(filepath.Join(src, "modules", "modules.json"), `{"Modules":[{"Key":"r","Dir":".terraform/s/a/..r/m"}]}`)
	if err := CopyInit(dir, src, filepath.Join(dir, ".terraform", "s", "d")); err == nil {
		t.Fatal(`CopyInit took over a module installed in the source's "..r"`)
	}
}
