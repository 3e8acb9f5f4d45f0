package cmdutil

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
)

func TestProgressPipeWritesEachStepAsAJSONLine(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// A descriptor of its own, as a child inherits it: not closed on exec
	// (syscall.Dup's copy is not). ProgressPipe owns it from here.
	fd, err := syscall.Dup(int(w.Fd()))
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == ProgressFDVar {
			return strconv.Itoa(fd)
		}
		return ""
	}
	CloseProgressOnExec(getenv)
	emit, done := ProgressPipe(getenv)
	if emit == nil {
		t.Fatalf("no writer for %s=%d", ProgressFDVar, fd)
	}
	flags, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
	if e != 0 {
		t.Fatal(e)
	}
	if flags&syscall.FD_CLOEXEC == 0 {
		t.Error("the progress descriptor is not closed on exec: the engine would hold it")
	}
	want := []scoperun.Progress{
		{Step: scoperun.StepInit},
		{Step: scoperun.StepPlan, Summary: &engine.Summary{Add: 2}},
		{Step: scoperun.StepApplyComplete, Address: "null_resource.a", Action: "create"},
	}
	for _, p := range want {
		emit(p)
	}
	done()
	var got []scoperun.Progress
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var p scoperun.Progress
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		got = append(got, p)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("steps read back (-want +got):\n%s", d)
	}
}

func TestProgressPipeWithoutADescriptor(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"", "x", "1", "2"} {
		CloseProgressOnExec(func(string) string { return v })
		emit, done := ProgressPipe(func(string) string { return v })
		done()
		if emit != nil {
			t.Errorf("%s=%q: a writer, want none", ProgressFDVar, v)
		}
	}
}
