package reaper

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestKillMarked: a process carrying the marker is killed, one carrying
// another run's marker is not.
func TestKillMarked(t *testing.T) {
	mine := exec.Command("sleep", "600")
	mine.Env = append(os.Environ(), Marker("run-test-mine"))
	other := exec.Command("sleep", "600")
	other.Env = append(os.Environ(), Marker("run-test-other"))
	for _, c := range []*exec.Cmd{mine, other} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	if n := KillMarked("run-test-mine"); n != 1 {
		t.Errorf("killed %d processes, want 1", n)
	}
	if err := mine.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the marked process ended with %v, want killed", err)
	}
	if other.ProcessState != nil {
		t.Error("the other run's process ended")
	}
}

// TestWatchDone: a run that says goodbye leaves everything alone.
func TestWatchDone(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "override")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	Watch(strings.NewReader("done\n"), "run-test-none", []string{f.Name()})
	if _, err := os.Stat(f.Name()); err != nil {
		t.Errorf("the file of a run that ended on its own was removed: %v", err)
	}
	Watch(strings.NewReader(""), "run-test-none", []string{f.Name()})
	if _, err := os.Stat(f.Name()); !os.IsNotExist(err) {
		t.Errorf("the file of a run that died stays: %v", err)
	}
}

// TestStartTrampoline: the watcher starts the real one (self) only when the
// run's pipe ends without a goodbye, and hands it the marker and the files.
func TestStartTrampoline(t *testing.T) {
	if _, err := os.Stat(shell); err != nil {
		t.Skipf("no %s: the watcher is sponson itself", shell)
	}
	dir := t.TempDir()
	ran := dir + "/ran"
	self := dir + "/self"
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + ran + "\n"
	if err := os.WriteFile(self, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}

	w, err := Start(self, "run-test-done", "a file")
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	if _, err := os.Stat(ran); !os.IsNotExist(err) {
		t.Fatalf("a run that said goodbye started the real watcher: %v", err)
	}

	w, err = Start(self, "run-test-died", "a file")
	if err != nil {
		t.Fatal(err)
	}
	w.pipe.Close() // the run dies: its end of the pipe closes unsaid
	if err := w.cmd.Wait(); err != nil {
		t.Fatalf("watcher: %v", err)
	}
	got, err := os.ReadFile(ran)
	if err != nil {
		t.Fatalf("a run that died did not start the real watcher: %v", err)
	}
	if want := Command + "\nrun-test-died\na file\n"; string(got) != want {
		t.Errorf("the real watcher got %q, want %q", got, want)
	}
}
