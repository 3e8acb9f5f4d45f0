package cmdutil

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func at(hhmm string) time.Time           { t, _ := time.ParseInLocation("15:04", hhmm, time.Local); return t }
func waitEvent(waited time.Duration) scoperun.WaitEvent {
	return scoperun.WaitEvent{
		Key: store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-42"},
		Lease: store.LeaseInfo{
			Holder: "run-3c1f2a9b", AcquiredAt: at("10:02"), ExpiresAt: at("10:17"),
			About: store.HolderInfo{JobURL: "https://github.com/acme/infra/actions/runs/123", Actor: "alice", Commit: "1a2b3c4d5e6f"},
		},
		Waited: waited,
	}
}

func TestWaitEventLine(t *testing.T) {
	t.Parallel()
	want := "waiting for preview/pr-42 (stack acme/app): held by run 3c1f2a9b (https://github.com/acme/infra/actions/runs/123, @alice, commit 1a2b3c4) since 10:02, lease until 10:17 — waited 40s"
	if got := waitEvent(40 * time.Second).Line(); got != want {
		t.Errorf("Line() =\n%s\nwant\n%s", got, want)
	}
}

// TestWaitLineInACILog: polls every 2 s for 95 s print a line at 0, 30, 60
// and 90 s, and nothing in between.
func TestWaitLineInACILog(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	clock := &fakeClock{t: at("10:05")}
	p := NewWaitLine(&out, false, clock.now)
	for waited := time.Duration(0); waited <= 95*time.Second; waited += 2 * time.Second {
		p.Event(waitEvent(waited))
		clock.add(2 * time.Second)
	}
	p.Event(scoperun.WaitEvent{Done: true})
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	var waited []string
	for _, l := range lines {
		_, w, _ := strings.Cut(l, "— waited ")
		waited = append(waited, w)
	}
	if strings.Join(waited, " ") != "0s 30s 1m0s 1m30s" || strings.Contains(out.String(), "\r") {
		t.Errorf("CI log output:\n%q", out.String())
	}
}

// TestWaitLineOnATerminal: every poll rewrites the one line in place, and
// the end of the wait closes it with a newline.
func TestWaitLineOnATerminal(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	clock := &fakeClock{t: at("10:05")}
	p := NewWaitLine(&out, true, clock.now)
	for i := range 3 {
		p.Event(waitEvent(time.Duration(2*i) * time.Second))
		clock.add(2 * time.Second)
	}
	if strings.Contains(out.String(), "\n") {
		t.Fatalf("a newline before the wait ended: %q", out.String())
	}
	p.Event(scoperun.WaitEvent{Done: true})
	got := out.String()
	if strings.Count(got, "\r\x1b[K") != 3 || !strings.HasSuffix(got, "waited 4s\n") {
		t.Errorf("terminal output: %q", got)
	}
	p.Event(scoperun.WaitEvent{Done: true})
	if out.String() != got {
		t.Error("a second Done printed again")
	}
}
