package engine

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The lines are OpenTofu 1.12's `apply -json` output for one create, split
// at arbitrary points as a pipe delivers them.
func TestUIStreamEventsAndText(t *testing.T) {
	t.Parallel()
	stream := `{"@level":"info","@message":"OpenTofu 1.12.6","type":"version","tofu":"1.12.6","ui":"1.2"}
{"@level":"info","@message":"terraform_data.a: Creating...","type":"apply_start","hook":{"resource":{"addr":"terraform_data.a","resource_type":"terraform_data","resource_name":"a"},"action":"create"}}
{"@level":"info","@message":"terraform_data.a: Creation complete after 0s [id=5f1c]","type":"apply_complete","hook":{"resource":{"addr":"terraform_data.a"},"action":"create","id_key":"id","id_value":"5f1c","elapsed_seconds":0}}
{"@level":"error","@message":"Error: boom","type":"diagnostic","diagnostic":{"severity":"error","summary":"boom","detail":"it broke\nbadly","address":"terraform_data.b"}}
not json`
	var out strings.Builder
	var events []Event
	ui := newUIStream(&out, func(e Event) { events = append(events, e) })
	for len(stream) > 0 {
		n := min(7, len(stream))
		if _, err := ui.Write([]byte(stream[:n])); err != nil {
			t.Fatal(err)
		}
		stream = stream[n:]
	}
	ui.Flush()
	wantEvents := []Event{
		{Type: "apply_start", Address: "terraform_data.a", Action: "create"},
		{Type: "apply_complete", Address: "terraform_data.a", Action: "create", IDKey: "id", IDValue: "5f1c"},
	}
	if d := cmp.Diff(wantEvents, events); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	wantText := "terraform_data.a: Creating...\nterraform_data.a: Creation complete after 0s [id=5f1c]\n\nError: boom\n\n  with terraform_data.b\n\n  it broke\n  badly\n\nnot json\n"
	if d := cmp.Diff(wantText, out.String()); d != "" {
		t.Errorf("text (-want +got):\n%s", d)
	}
}

// An apply of a saved plan reads as the human UI's: no planned changes
// repeated, the summary after a blank line, the outputs by name with
// sensitive values hidden.
func TestUIStreamReadsLikeTheHumanApply(t *testing.T) {
	t.Parallel()
	stream := `{"@level":"info","@message":"terraform_data.a: Plan to create","type":"planned_change","change":{"resource":{"addr":"terraform_data.a"},"action":"create"}}
{"@level":"info","@message":"Apply complete! Resources: 1 added, 0 changed, 0 destroyed.","type":"change_summary","changes":{"add":1}}
{"@level":"info","@message":"Outputs: 2","type":"outputs","outputs":{"z":{"sensitive":true,"type":"string","value":"s3cret"},"a":{"sensitive":false,"type":"string","value":"x"}}}
`
	var out strings.Builder
	ui := newUIStream(&out, nil)
	if _, err := ui.Write([]byte(stream)); err != nil {
		t.Fatal(err)
	}
	want := "\nApply complete! Resources: 1 added, 0 changed, 0 destroyed.\n\nOutputs:\n\na = \"x\"\nz = <sensitive>\n"
	if d := cmp.Diff(want, out.String()); d != "" {
		t.Errorf("text (-want +got):\n%s", d)
	}
}

// TestUIStreamReadEnd: after the lines of each read, and only then, the
// stream says the read ended, so events the engine wrote together reach a
// consumer as one batch.
func TestUIStreamReadEnd(t *testing.T) {
	t.Parallel()
	line := func(addr string) string {
		return `{"@message":"` + addr + `: Creation complete","type":"apply_complete","hook":{"resource":{"addr":"` + addr + `"},"action":"create","id_value":"1"}}` + "\n"
	}
	var log []string
	ui := newUIStream(&strings.Builder{}, func(e Event) { log = append(log, e.Address) })
	ui.readEnd = func() { log = append(log, "|") }
	two := line("a.x") + line("a.y")
	for _, read := range []string{two + line("a.z")[:10], line("a.z")[10:]} {
		if _, err := ui.Write([]byte(read)); err != nil {
			t.Fatal(err)
		}
	}
	if d := cmp.Diff([]string{"a.x", "a.y", "|", "a.z", "|"}, log); d != "" {
		t.Errorf("events and read ends (-want +got):\n%s", d)
	}
}

// TestUIStreamHeartbeat: a resource in flight is spoken of once the
// interval passed without a line about it (OpenTofu reports a slow create's
// progress once), the engine's own progress line resets its clock, and a
// change that ended is never spoken of again. The clock is the test's; the
// beat is called as the ticker would.
func TestUIStreamHeartbeat(t *testing.T) {
	t.Parallel()
	clock := &testClock{t: time.Unix(1700000000, 0)}
	var out strings.Builder
	ui := newUIStream(&out, nil)
	stop := ui.heartbeat(30*time.Second, clock.now)
	stop() // the test beats by hand
	write := func(line string) {
		t.Helper()
		if _, err := ui.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	beat := func(after time.Duration) string {
		clock.add(after)
		out.Reset()
		ui.beat(30 * time.Second)
		return out.String()
	}
	write(`{"@message":"time_sleep.db: Creating...","type":"apply_start","hook":{"resource":{"addr":"time_sleep.db"},"action":"create"}}`)
	write(`{"@message":"null_resource.old: Destroying...","type":"apply_start","hook":{"resource":{"addr":"null_resource.old"},"action":"delete"}}`)
	if got := beat(29 * time.Second); got != "" {
		t.Errorf("spoke before the interval: %q", got)
	}
	if got, want := beat(time.Second), "null_resource.old: Still destroying... [30s elapsed]\ntime_sleep.db: Still creating... [30s elapsed]\n"; got != want {
		t.Errorf("at 30s: %q, want %q", got, want)
	}
	clock.add(5 * time.Second)
	write(`{"@message":"time_sleep.db: Still creating... [35s elapsed]","type":"apply_progress","hook":{"resource":{"addr":"time_sleep.db"},"action":"create","elapsed_seconds":35}}`)
	write(`{"@message":"null_resource.old: Destruction complete after 36s","type":"apply_complete","hook":{"resource":{"addr":"null_resource.old"},"action":"delete"}}`)
	if got := beat(25 * time.Second); got != "" {
		t.Errorf("spoke 25s after the engine's own progress line, or of a change that ended: %q", got)
	}
	if got, want := beat(5*time.Second), "time_sleep.db: Still creating... [1m5s elapsed]\n"; got != want {
		t.Errorf("at 65s: %q, want %q", got, want)
	}
	write(`{"@message":"time_sleep.db: Creation complete after 70s","type":"apply_errored","hook":{"resource":{"addr":"time_sleep.db"},"action":"create"}}`)
	if got := beat(time.Hour); got != "" {
		t.Errorf("spoke of a change that ended: %q", got)
	}
}

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestUIStreamSaid: the engine's error diagnostics of an apply become part
// of its failure, so that a summary can show them; warnings do not.
func TestUIStreamSaid(t *testing.T) {
	t.Parallel()
	ui := newUIStream(&strings.Builder{}, nil)
	for _, l := range []string{
		`{"@level":"warn","type":"diagnostic","diagnostic":{"severity":"warning","summary":"deprecated"}}`,
		`{"@level":"error","type":"diagnostic","diagnostic":{"severity":"error","summary":"Invalid template interpolation value","detail":"The expression result is null.","address":"terraform_data.a[0]"}}`,
	} {
		if _, err := ui.Write([]byte(l + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	if ui.said(nil) != nil {
		t.Error("said made an error of a success")
	}
	want := "exit status 1\n\nError: Invalid template interpolation value\n\n  with terraform_data.a[0]\n\n  The expression result is null."
	if got := ui.said(errors.New("exit status 1")).Error(); got != want {
		t.Errorf("said %q, want %q", got, want)
	}
}
