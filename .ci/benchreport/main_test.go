package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteKeepsHandWritten: the tail of BENCHMARKS.md from handMarker on
// survives every write byte for byte, whatever the runs write above it.
func TestWriteKeepsHandWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	tail := handMarker + "\n\n## Measurements behind the design\n\n### §2.4 Intent\n\n98 KB, 850 KB;  two spaces,\ttab, no newline at the end"
	if err := os.WriteFile(path, []byte("# Benchmarks\n\nold run\n\n"+tail), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, report := range []string{"# Benchmarks\n\nfirst run\n", "# Benchmarks\n\nsecond run, longer\n\n| a | b |\n"} {
		if err := write(path, report); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(got), report) {
			t.Errorf("the run's report is not at the top:\n%s", got)
		}
		if !strings.HasSuffix(string(got), "\n"+tail) {
			t.Errorf("the hand-written tail changed:\n%q\nwant it to end in\n%q", got, tail)
		}
		if strings.Count(string(got), handMarker) != 1 {
			t.Errorf("the marker is not there once:\n%s", got)
		}
	}
}

// TestWriteWithoutMarker: a file without the marker, or no file, is written
// as the report alone.
func TestWriteWithoutMarker(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	for range 2 {
		if err := write(path, "# Benchmarks\n\nrun\n"); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != "# Benchmarks\n\nrun\n" {
			t.Errorf("got %q", got)
		}
	}
}

// TestTargetsNameBenchmarks: every row of the table of targets names a
// package of the repository (as benchreport reads it from go test's "pkg:"
// line) that declares the benchmark it reads, so a benchmark moved to
// another package does not leave its row "not run".
func TestTargetsNameBenchmarks(t *testing.T) {
	for _, tg := range targets {
		name, _, _ := strings.Cut(tg.bench, "/")
		dir := filepath.Join("..", "..", filepath.FromSlash(tg.pkg))
		files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if err != nil || len(files) == 0 {
			t.Errorf("%s: package %s has no test files", tg.what, tg.pkg)
			continue
		}
		found := false
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(src), "func "+name+"(") {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s: no %s in package %s", tg.what, name, tg.pkg)
		}
	}
}
