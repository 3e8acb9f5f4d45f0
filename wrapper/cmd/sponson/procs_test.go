package main

import (
	"runtime"
	"testing"
)

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
