package engine_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
)

func overridePath(dir string) string { return filepath.Join(dir, engine.OverrideFileName) }

func place(t *testing.T, dir string) *engine.Override {
	t.Helper()
	o, err := engine.PlaceOverride(dir)
	if err != nil {
		t.Fatalf("PlaceOverride: %v", err)
	}
	return o
}

func release(t *testing.T, o *engine.Override) {
	t.Helper()
	if err := o.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

// wantOverride fails unless the override file is there with OverrideContent.
func wantOverride(t *testing.T, dir string) {
	t.Helper()
	got, err := os.ReadFile(overridePath(dir))
	if err != nil {
		t.Fatalf("override file: %v", err)
	}
	if diff := cmp.Diff(engine.OverrideContent, string(got)); diff != "" {
		t.Fatalf("override content (-want +got):\n%s", diff)
	}
}

func wantNoOverride(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Lstat(overridePath(dir)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("override file after the last release: Lstat error %v, want not-exist", err)
	}
}

// wantOnly fails unless dir holds exactly the names given: no temporary
// files are left behind.
func wantOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if names == nil {
		names = []string{}
	}
	if diff := cmp.Diff(names, got); diff != "" {
		t.Errorf("directory entries (-want +got):\n%s", diff)
	}
}

func TestOverrideContent(t *testing.T) {
	t.Parallel()
	if engine.OverrideFileName != "sponson_backend_override.tf" {
		t.Errorf("OverrideFileName = %q", engine.OverrideFileName)
	}
	// The engine only reads *_override.tf files as overrides.
	if filepath.Ext(engine.OverrideFileName) != ".tf" || !bytes.HasSuffix([]byte(engine.OverrideFileName), []byte("_override.tf")) {
		t.Errorf("OverrideFileName %q is not an override file name", engine.OverrideFileName)
	}
	if !bytes.Contains([]byte(engine.OverrideContent), []byte(`backend "http" {}`)) {
		t.Errorf("OverrideContent has no empty http backend:\n%s", engine.OverrideContent)
	}
}

func TestPlaceOverrideSingle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := place(t, dir)
	wantOverride(t, dir)
	wantOnly(t, dir, engine.OverrideFileName)
	release(t, o)
	wantNoOverride(t, dir)
	wantOnly(t, dir)
	// A second Release, and Release of nil, do nothing.
	if err := o.Release(); err != nil {
		t.Errorf("second Release: %v", err)
	}
	var none *engine.Override
	if err := none.Release(); err != nil {
		t.Errorf("nil Release: %v", err)
	}
}

func TestPlaceOverrideTwoHolders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		order []int // which holder releases first
	}{
		{"first placed releases first", []int{0, 1}},
		{"last placed releases first", []int{1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			holders := []*engine.Override{place(t, dir), place(t, dir)}
			wantOverride(t, dir)
			release(t, holders[tt.order[0]])
			wantOverride(t, dir) // the other holder still uses it
			release(t, holders[tt.order[1]])
			wantNoOverride(t, dir)
			wantOnly(t, dir)
		})
	}
}

func TestPlaceOverrideAfterRelease(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	release(t, place(t, dir))
	o := place(t, dir)
	wantOverride(t, dir)
	release(t, o)
	wantNoOverride(t, dir)
}

func TestPlaceOverrideForeignFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content string
	}{
		{"user's own backend", "terraform {\n  backend \"s3\" {}\n}\n"},
		{"empty", ""},
		{"our content with a trailing edit", engine.OverrideContent + "# edited\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(overridePath(dir), []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			o, err := engine.PlaceOverride(dir)
			if err == nil {
				_ = o.Release() // the test fails anyway; this only tidies up
				t.Fatal("PlaceOverride over a foreign file succeeded")
			}
			got, rerr := os.ReadFile(overridePath(dir))
			if rerr != nil {
				t.Fatalf("foreign file after PlaceOverride: %v", rerr)
			}
			if diff := cmp.Diff(tt.content, string(got)); diff != "" {
				t.Errorf("foreign file changed (-want +got):\n%s", diff)
			}
			wantOnly(t, dir, engine.OverrideFileName)
		})
	}
}

// TestPlaceOverrideStale: a run that crashed leaves the file behind with
// nobody holding it; the next run adopts it and, being the last, removes it.
func TestPlaceOverrideStale(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(overridePath(dir), []byte(engine.OverrideContent), 0o644); err != nil {
		t.Fatal(err)
	}
	o := place(t, dir)
	wantOverride(t, dir)
	release(t, o)
	wantNoOverride(t, dir)
	wantOnly(t, dir)
}

func TestPlaceOverrideMissingDir(t *testing.T) {
	t.Parallel()
	o, err := engine.PlaceOverride(filepath.Join(t.TempDir(), "missing"))
	if err == nil {
		_ = o.Release() // the test fails anyway; this only tidies up
		t.Fatal("PlaceOverride in a missing directory succeeded")
	}
}

const (
	helperDirEnv   = "SPONSON_TEST_OVERRIDE_DIR"
	helperLoopsEnv = "SPONSON_TEST_OVERRIDE_LOOPS"
)

// TestMain turns the test binary into a child of TestPlaceOverrideProcesses
// when started by it.
func TestMain(m *testing.M) {
	if dir := os.Getenv(helperDirEnv); dir != "" {
		os.Exit(overrideChild(dir))
	}
	os.Exit(m.Run())
}

// overrideChild waits until its stdin closes, so that all children start
// together, then places, checks and releases the override in a loop. It
// returns non-zero if the file is ever missing or different while it holds
// it.
func overrideChild(dir string) int {
	loops, err := strconv.Atoi(os.Getenv(helperLoopsEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	io.Copy(io.Discard, os.Stdin) //nolint:errcheck // EOF is the start signal
	for i := range loops {
		o, err := engine.PlaceOverride(dir)
		if err != nil {
			fmt.Fprintf(os.Stderr, "iteration %d: PlaceOverride: %v\n", i, err)
			return 1
		}
		for check := range 3 {
			got, err := os.ReadFile(overridePath(dir))
			if err != nil {
				fmt.Fprintf(os.Stderr, "iteration %d, check %d: override file while held: %v\n", i, check, err)
				return 1
			}
			if string(got) != engine.OverrideContent {
				fmt.Fprintf(os.Stderr, "iteration %d, check %d: override content while held = %q\n", i, check, got)
				return 1
			}
		}
		if err := o.Release(); err != nil {
			fmt.Fprintf(os.Stderr, "iteration %d: Release: %v\n", i, err)
			return 1
		}
	}
	fmt.Printf("%s %d\n", childDone, loops)
	return 0
}

const childDone = "override child done:"

// TestPlaceOverrideProcesses runs the test binary as several processes
// that share one override file.
func TestPlaceOverrideProcesses(t *testing.T) {
	t.Parallel()
	const children, loops = 8, 30
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	start, go_, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	type child struct {
		cmd *exec.Cmd
		out bytes.Buffer
	}
	cs := make([]*child, children)
	for i := range cs {
		c := &child{}
		c.cmd = exec.Command(exe)
		c.cmd.Env = append(os.Environ(), helperDirEnv+"="+dir, helperLoopsEnv+"="+strconv.Itoa(loops))
		c.cmd.Stdin = start
		c.cmd.Stdout = &c.out
		c.cmd.Stderr = &c.out
		if err := c.cmd.Start(); err != nil {
			go_.Close()
			t.Fatalf("start child %d: %v", i, err)
		}
		cs[i] = c
	}
	start.Close()
	go_.Close() // every child sees EOF: go
	for i, c := range cs {
		if err := c.cmd.Wait(); err != nil {
			t.Errorf("child %d: %v\n%s", i, err, c.out.String())
		} else if !bytes.Contains(c.out.Bytes(), []byte(fmt.Sprintf("%s %d\n", childDone, loops))) {
			// A child that ran the tests instead would also exit 0.
			t.Errorf("child %d did not run the helper:\n%s", i, c.out.String())
		}
	}
	wantNoOverride(t, dir)
	wantOnly(t, dir)
}
