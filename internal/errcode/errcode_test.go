package errcode_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

func TestTableRows(t *testing.T) {
	t.Parallel()
	exits := map[errcode.ExitCode]bool{
		errcode.ExitOK: true, errcode.ExitFailed: true, errcode.ExitRefused: true, errcode.ExitLock: true,
	}
	seen := map[errcode.Code]bool{}
	rows := errcode.Table()
	if len(rows) == 0 {
		t.Fatal("Table() is empty")
	}
	for _, s := range rows {
		if s.Code == "" {
			t.Errorf("row with an empty code: %+v", s)
		}
		if seen[s.Code] {
			t.Errorf("code %s appears twice in Table()", s.Code)
		}
		seen[s.Code] = true
		if s.Meaning == "" {
			t.Errorf("%s: empty meaning", s.Code)
		}
		if s.Hint == "" {
			t.Errorf("%s: empty hint", s.Code)
		}
		if !exits[s.Exit] {
			t.Errorf("%s: exit code %d is not one of the CLI contract's", s.Code, s.Exit)
		}
		if s.Exit == errcode.ExitOK {
			t.Errorf("%s: a failure must not exit 0", s.Code)
		}
		if got := errcode.Lookup(s.Code); got != s {
			t.Errorf("Lookup(%s) = %+v, want the table row %+v", s.Code, got, s)
		}
	}
	for i := 1; i < len(rows); i++ {
		if rows[i-1].Code >= rows[i].Code {
			t.Errorf("Table() not sorted by code: %s before %s", rows[i-1].Code, rows[i].Code)
		}
	}
}

// TestRequiredCodes checks the codes docs/design.md §4 requires and their exit
// codes: 2 refused before running, 3 lease held or lost, 1 failed.
func TestRequiredCodes(t *testing.T) {
	t.Parallel()
	want := map[string]errcode.ExitCode{
		"USAGE":                errcode.ExitRefused,
		"CTX_NULL":             errcode.ExitRefused,
		"ENV_NOT_APPROVED":     errcode.ExitRefused,
		"LOCK_HELD":            errcode.ExitLock,
		"LOCK_LOST":            errcode.ExitLock,
		"OWNED_BY_OTHER_SCOPE": errcode.ExitFailed,
		"STORE_CONTENDED":      errcode.ExitFailed,
		"STORE_REJECTED":       errcode.ExitFailed,
		"STORE_PERMISSION":     errcode.ExitFailed,
		"STORE_UNAVAILABLE":    errcode.ExitFailed,
		"RECEIPT_CORRUPT":      errcode.ExitFailed,
		"RECEIPT_VERSION":      errcode.ExitFailed,
		"WAIT_TIMEOUT":         errcode.ExitFailed,
		"ENGINE_FAILED":        errcode.ExitFailed,
		"ENGINE_NOT_FOUND":     errcode.ExitFailed,
		"INTENT_UNRESOLVED":    errcode.ExitFailed,
		"INTERNAL":             errcode.ExitFailed,
	}
	got := map[string]errcode.ExitCode{}
	for _, s := range errcode.Table() {
		if _, required := want[string(s.Code)]; required {
			got[string(s.Code)] = s.Exit
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("required codes and exit codes (-want +got):\n%s", diff)
	}
}

func TestExitCodeValues(t *testing.T) {
	t.Parallel()
	got := []errcode.ExitCode{errcode.ExitOK, errcode.ExitFailed, errcode.ExitRefused, errcode.ExitLock}
	if diff := cmp.Diff([]errcode.ExitCode{0, 1, 2, 3}, got); diff != "" {
		t.Errorf("exit code constants (-want +got):\n%s", diff)
	}
}

func TestLookupUnknownIsInternal(t *testing.T) {
	t.Parallel()
	if got, want := errcode.Lookup("NO_SUCH_CODE"), errcode.Lookup(errcode.Internal); got != want {
		t.Errorf("Lookup(NO_SUCH_CODE) = %+v, want the INTERNAL row %+v", got, want)
	}
	if got := errcode.Lookup(errcode.Internal).Code; got != errcode.Internal {
		t.Errorf("Lookup(INTERNAL).Code = %s", got)
	}
}

func TestAsPlainErrorIsInternal(t *testing.T) {
	t.Parallel()
	cause := errors.New("disk on fire")
	e := errcode.As(cause)
	if e == nil {
		t.Fatal("As(plain error) = nil")
	}
	if e.Code != errcode.Internal {
		t.Errorf("As(plain error).Code = %s, want INTERNAL", e.Code)
	}
	if !errors.Is(e, cause) {
		t.Errorf("As(plain error) lost its cause: errors.Is = false")
	}
	if e.Unwrap() != cause {
		t.Errorf("As(plain error).Unwrap() = %v, want the cause", e.Unwrap())
	}
	if got, want := e.Error(), "INTERNAL: unexpected error: disk on fire"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got := e.Exit(); got != errcode.ExitFailed {
		t.Errorf("Exit() = %d, want %d", got, errcode.ExitFailed)
	}
}

func TestAsKeepsCodedError(t *testing.T) {
	t.Parallel()
	orig := errcode.New(errcode.LockHeld, "held by %s", "run-a")
	wrapped := fmt.Errorf("acquiring: %w", orig)
	if got := errcode.As(wrapped); got != orig {
		t.Errorf("As(wrapped coded error) = %v, want the original *Error %v", got, orig)
	}
	if got := errcode.As(nil); got != nil {
		t.Errorf("As(nil) = %v, want nil", got)
	}
}

func TestWrapKeepsCause(t *testing.T) {
	t.Parallel()
	e := errcode.Wrap(errcode.StorePermission, fs.ErrPermission, "open %s", "/store")
	if !errors.Is(e, fs.ErrPermission) {
		t.Error("errors.Is(Wrap(..., fs.ErrPermission), fs.ErrPermission) = false")
	}
	if !errcode.Is(e, errcode.StorePermission) {
		t.Error("errcode.Is(Wrap(STORE_PERMISSION), STORE_PERMISSION) = false")
	}
	if errcode.Is(e, errcode.Internal) {
		t.Error("errcode.Is(Wrap(STORE_PERMISSION), INTERNAL) = true")
	}
	if got, want := e.Message, "open /store: "+fs.ErrPermission.Error(); got != want {
		t.Errorf("Message = %q, want %q", got, want)
	}
	if got, want := e.Hint, errcode.Lookup(errcode.StorePermission).Hint; got != want {
		t.Errorf("Hint = %q, want the table's %q", got, want)
	}
	// Wrapping nil keeps the message as given.
	if got, want := errcode.Wrap(errcode.Usage, nil, "bad flag").Message, "bad flag"; got != want {
		t.Errorf("Wrap(nil).Message = %q, want %q", got, want)
	}
}

func TestWithAndWithHint(t *testing.T) {
	t.Parallel()
	e := errcode.New(errcode.LockHeld, "held").With("holder", "run-a").With("token", 7).WithHint("wait")
	if diff := cmp.Diff(map[string]any{"holder": "run-a", "token": 7}, e.Details); diff != "" {
		t.Errorf("Details (-want +got):\n%s", diff)
	}
	if e.Hint != "wait" {
		t.Errorf("Hint = %q, want %q", e.Hint, "wait")
	}
}

func TestExitFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want errcode.ExitCode
	}{
		{"nil", nil, errcode.ExitOK},
		{"plain error", errors.New("boom"), errcode.ExitFailed},
		{"usage", errcode.New(errcode.Usage, "x"), errcode.ExitRefused},
		{"ctx null", errcode.New(errcode.CtxNull, "x"), errcode.ExitRefused},
		{"env not approved", errcode.New(errcode.EnvNotApproved, "x"), errcode.ExitRefused},
		{"lock held", errcode.New(errcode.LockHeld, "x"), errcode.ExitLock},
		{"lock lost wrapped", fmt.Errorf("ctx: %w", errcode.New(errcode.LockLost, "x")), errcode.ExitLock},
		{"engine failed", errcode.New(errcode.EngineFailed, "x"), errcode.ExitFailed},
		{"unknown code", &errcode.Error{Code: "NO_SUCH_CODE"}, errcode.ExitFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := errcode.ExitFor(tt.err); got != tt.want {
				t.Errorf("ExitFor(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

func TestIs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		code errcode.Code
		want bool
	}{
		{"nil", nil, errcode.Internal, false},
		{"plain", errors.New("x"), errcode.Internal, false},
		{"same code", errcode.New(errcode.WaitTimeout, "x"), errcode.WaitTimeout, true},
		{"other code", errcode.New(errcode.WaitTimeout, "x"), errcode.LockHeld, false},
		{"wrapped", fmt.Errorf("a: %w", errcode.New(errcode.WaitTimeout, "x")), errcode.WaitTimeout, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := errcode.Is(tt.err, tt.code); got != tt.want {
				t.Errorf("Is(%v, %s) = %v, want %v", tt.err, tt.code, got, tt.want)
			}
		})
	}
}
