package oneproc

import (
	"os"
	"runtime"
	"testing"
)

// The package's init ran before this test binary's tests: one processor,
// unless this test run was given GOMAXPROCS.
func TestInitSetsOneProcessor(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set for this test run: the init leaves it")
	}
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("%d processors after the package's init, want 1", n)
	}
}

func TestOneProcessorUnlessTheUserChose(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	runtime.GOMAXPROCS(2)
	oneProcessor("2")
	if n := runtime.GOMAXPROCS(0); n != 2 {
		t.Fatalf("GOMAXPROCS set by the user: %d processors, want 2", n)
	}
	oneProcessor("")
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("%d processors, want 1", n)
	}
}
