package engine

import (
	"bytes"
	"testing"
)

// write writes b to h, failing the test on an error.
func write(t *testing.T, h *heldWriter, b []byte) {
	t.Helper()
	if _, err := h.Write(b); err != nil {
		t.Fatal(err)
	}
}

// TestHeldWriter: an early apply's output reaches the run's output only
// once the run takes the apply, in its order; a stopped one leaves none.
func TestHeldWriter(t *testing.T) {
	var dst bytes.Buffer
	h := &heldWriter{dst: &dst}
	write(t, h, []byte("first\n"))
	write(t, h, []byte("second\n"))
	if dst.Len() != 0 {
		t.Fatalf("held output reached the run before it took the apply: %q", dst.String())
	}
	h.pass(true)
	write(t, h, []byte("third\n"))
	h.pass(false) // decided once
	if got, want := dst.String(), "first\nsecond\nthird\n"; got != want {
		t.Errorf("passed output = %q, want %q", got, want)
	}

	dst.Reset()
	h = &heldWriter{dst: &dst}
	write(t, h, []byte("Error acquiring the state lock\n"))
	h.pass(false)
	write(t, h, []byte("more\n"))
	if dst.Len() != 0 {
		t.Errorf("a discarded apply's output reached the run: %q", dst.String())
	}
}
