package planset_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/planset"
)

// written is a directory with two stacks' plans and its manifest.
func written(t *testing.T, key []byte) (string, *planset.Manifest) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "plans")
	if err := planset.Prepare(dir); err != nil {
		t.Fatal(err)
	}
	m := &planset.Manifest{Which: "--all", Commit: "abc"}
	for i, d := range []string{"stacks/network", "stacks/app"} {
		e := planset.Entry{Stack: d, Directory: d, Depth: i, File: planset.File(d)}
		if i == 1 {
			e.Needs = []string{"stacks/network"}
		}
		if err := os.WriteFile(filepath.Join(dir, e.File), []byte("plan of "+d), 0o600); err != nil {
			t.Fatal(err)
		}
		m.Stacks = append(m.Stacks, e)
	}
	if err := planset.Write(dir, m, key); err != nil {
		t.Fatal(err)
	}
	return dir, m
}

func mustWrite(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func wantCorrupt(t *testing.T, err error, part string) {
	t.Helper()
	if err == nil || errcode.As(err).Code != errcode.PlanCorrupt || !strings.Contains(err.Error(), part) {
		t.Errorf("got %v, want PLAN_CORRUPT with %q", err, part)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, key := range [][]byte{nil, []byte("0123456789abcdef")} {
		dir, m := written(t, key)
		got, err := planset.Read(dir, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Stacks) != 2 || got.Stacks[1].Needs[0] != "stacks/network" || got.Stacks[0].Digest != m.Stacks[0].Digest || got.Commit != "abc" {
			t.Errorf("read back %+v", got)
		}
	}
}

func TestRefusals(t *testing.T) {
	key := []byte("0123456789abcdef")
	t.Run("swapped plan", func(t *testing.T) {
		dir, _ := written(t, nil)
		mustWrite(t, filepath.Join(dir, planset.File("stacks/app")), "another plan")
		_, err := planset.Read(dir, nil)
		wantCorrupt(t, err, "the plan of stacks/app (stacks_2fapp.tfplan) is not the one the manifest lists")
	})
	t.Run("missing plan", func(t *testing.T) {
		dir, _ := written(t, nil)
		os.Remove(filepath.Join(dir, planset.File("stacks/app")))
		_, err := planset.Read(dir, nil)
		wantCorrupt(t, err, "the plan of stacks/app")
	})
	t.Run("added file", func(t *testing.T) {
		dir, _ := written(t, nil)
		mustWrite(t, filepath.Join(dir, "stacks-extra.tfplan"), "x")
		_, err := planset.Read(dir, nil)
		wantCorrupt(t, err, "holds files the manifest does not list (stacks-extra.tfplan)")
	})
	t.Run("edited manifest", func(t *testing.T) {
		dir, _ := written(t, nil)
		p := filepath.Join(dir, planset.ManifestName)
		b, _ := os.ReadFile(p)
		mustWrite(t, p, strings.Replace(string(b), `"commit":"abc"`, `"commit":"abd"`, 1))
		_, err := planset.Read(dir, nil)
		wantCorrupt(t, err, "does not match its seal")
	})
	t.Run("unfinished", func(t *testing.T) {
		dir, _ := written(t, nil)
		os.Remove(filepath.Join(dir, planset.ManifestName))
		_, err := planset.Read(dir, nil)
		wantCorrupt(t, err, "did not finish")
	})
	t.Run("keyed seal without the key", func(t *testing.T) {
		dir, _ := written(t, key)
		_, err := planset.Read(dir, nil)
		wantCorrupt(t, err, "is sealed with a key")
	})
	t.Run("digest seal with a key", func(t *testing.T) {
		dir, _ := written(t, nil)
		_, err := planset.Read(dir, key)
		wantCorrupt(t, err, "has no keyed seal")
	})
}

func TestPrepare(t *testing.T) {
	dir, _ := written(t, nil)
	if err := planset.Prepare(dir); err == nil || errcode.As(err).Code != errcode.Usage || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("Prepare of a used directory: %v", err)
	}
	file := filepath.Join(t.TempDir(), "f")
	mustWrite(t, file, "")
	if err := planset.Prepare(file); err == nil || !strings.Contains(err.Error(), "is a file") {
		t.Errorf("Prepare of a file: %v", err)
	}
	if !planset.IsSet(dir) || planset.IsSet(file) {
		t.Error("IsSet does not tell a directory from a file")
	}
}
