package scoperun

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// recorder is a checkpoint write that the test lets through one at a time,
// and an engine whose pauses it counts.
type recorder struct {
	mu      sync.Mutex
	written [][]receipt.Completion
	paused  bool
	pauses  int
	gate    chan error // each write waits for a value: its result
	entered chan struct{}
}

func newRecorder() *recorder {
	return &recorder{gate: make(chan error), entered: make(chan struct{}, 16)}
}

func (w *recorder) write(_ context.Context, done []receipt.Completion) error {
	w.entered <- struct{}{}
	err := <-w.gate
	if err == nil {
		w.mu.Lock()
		w.written = append(w.written, append([]receipt.Completion(nil), done...))
		w.mu.Unlock()
	}
	return err
}

func (w *recorder) hold() func() {
	w.mu.Lock()
	w.paused = true
	w.pauses++
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		w.paused = false
		w.mu.Unlock()
	}
}

func (w *recorder) isPaused() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.paused
}

func chainCheckpoint() *receipt.Receipt {
	return &receipt.Receipt{
		Ledger: []receipt.Entry{
			{Address: "b", CreatedBy: receipt.CreatedByIntent, After: []string{"a"}},
			{Address: "a", CreatedBy: receipt.CreatedByIntent},
			{Address: "r", CreatedBy: receipt.CreatedByIntent},
		},
		Changes: []receipt.Change{{Address: "r", Actions: []string{"delete", "create"}}},
	}
}

// TestHeldCompletionPausesUntilWritten: the completion of a change a create
// waits for pauses the engine, and its reader, until a write holding it is
// in the store; other completions do not pause.
func TestHeldCompletionPausesUntilWritten(t *testing.T) {
	t.Parallel()
	w := newRecorder()
	c := startCompletions(context.Background(), chainCheckpoint(), w.write, func(string) {}, w.hold)

	// b waits for nothing: not held, the reader goes on at once.
	c.observe(engine.Event{Type: "apply_complete", Address: "x", Action: "create", IDValue: "id-x"})
	if w.isPaused() {
		t.Fatal("a completion nothing waits for paused the engine")
	}
	<-w.entered
	w.gate <- nil

	// a is waited for: observe returns only once it is written.
	returned := make(chan struct{})
	go func() {
		c.observe(engine.Event{Type: "apply_complete", Address: "a", Action: "create", IDValue: "id-a"})
		close(returned)
	}()
	<-w.entered
	if !w.isPaused() {
		t.Fatal("the completion b waits for did not pause the engine")
	}
	select {
	case <-returned:
		t.Fatal("the reader went on before the completion was written")
	default:
	}
	w.gate <- nil
	<-returned
	if w.isPaused() {
		t.Fatal("the engine was not let go after the write")
	}
	w.mu.Lock()
	last := w.written[len(w.written)-1]
	w.mu.Unlock()
	if len(last) != 2 || last[1].Address != "a" || last[1].ID != "id-a" {
		t.Fatalf("the write held %+v, want x then a", last)
	}

	// The delete of a delete-then-create replacement is held too.
	returned = make(chan struct{})
	go func() {
		c.observe(engine.Event{Type: "apply_complete", Address: "r", Action: "delete"})
		close(returned)
	}()
	<-w.entered
	if !w.isPaused() {
		t.Fatal("the delete a replacement's create waits for did not pause the engine")
	}
	w.gate <- nil
	<-returned
	c.stop()
	if w.pauses != 2 {
		t.Errorf("%d pauses, want 2", w.pauses)
	}
}

// TestHeldCompletionLetsGoWhenTheWriteFails: a refused write (a lost lease)
// ends the pause; the run stops the engine its own way.
func TestHeldCompletionLetsGoWhenTheWriteFails(t *testing.T) {
	t.Parallel()
	w := newRecorder()
	c := startCompletions(context.Background(), chainCheckpoint(), w.write, func(string) {}, w.hold)
	returned := make(chan struct{})
	go func() {
		c.observe(engine.Event{Type: "apply_complete", Address: "a", Action: "create", IDValue: "id-a"})
		close(returned)
	}()
	<-w.entered
	w.gate <- errors.New("refused")
	<-returned
	if w.isPaused() {
		t.Fatal("the engine stayed paused after a failed write")
	}
	// Nothing more is written or held.
	c.observe(engine.Event{Type: "apply_complete", Address: "a", Action: "update"})
	c.stop()
	if w.pauses != 1 {
		t.Errorf("%d pauses, want 1", w.pauses)
	}
}

// TestPressingCompletionSkipsTheRest: a completed create whose loss would
// need a person is written as soon as the write on its way lands, without
// the rest; completions of state-only and in-place types wait for it. The
// rest is an hour here: a second write at all shows it was cut short.
func TestPressingCompletionSkipsTheRest(t *testing.T) {
	t.Parallel()
	rec := &receipt.Receipt{Ledger: []receipt.Entry{
		{Address: "fixture_object.p", Type: "fixture_object", CreatedBy: receipt.CreatedByIntent},
		{Address: "terraform_data.s", Type: "terraform_data", StateOnly: true, CreatedBy: receipt.CreatedByIntent},
		{Address: "local_file.f", Provider: "registry.opentofu.org/hashicorp/local", Type: "local_file", CreatedBy: receipt.CreatedByIntent},
		{Address: "terraform_data.first", Type: "terraform_data", StateOnly: true, CreatedBy: receipt.CreatedByIntent},
	}}
	w := newRecorder()
	c := startCompletions(context.Background(), rec, w.write, func(string) {}, w.hold)
	c.mu.Lock()
	c.rest = time.Hour
	c.mu.Unlock()
	// The first completion is written at once; while it is on its way,
	// the others come.
	c.observe(engine.Event{Type: "apply_complete", Address: "terraform_data.first", Action: "create", IDValue: "1"})
	<-w.entered
	c.observe(engine.Event{Type: "apply_complete", Address: "terraform_data.s", Action: "create", IDValue: "2"})
	c.observe(engine.Event{Type: "apply_complete", Address: "local_file.f", Action: "create", IDValue: "3"})
	w.gate <- nil
	// Not pressing: they wait for the rest (an hour).
	select {
	case <-w.entered:
		t.Fatal("completions of state-only and in-place types cut the rest short")
	default:
	}
	c.observe(engine.Event{Type: "apply_complete", Address: "fixture_object.p", Action: "create", IDValue: "4"})
	<-w.entered
	w.gate <- nil
	// Nothing is pending: stop writes nothing more, and waits for the
	// second write to be done.
	c.stop()
	w.mu.Lock()
	last := w.written[len(w.written)-1]
	n := len(w.written)
	w.mu.Unlock()
	if n != 2 || len(last) != 4 || last[3].Address != "fixture_object.p" {
		t.Fatalf("%d writes, the last holding %+v; want 2, the second with every completion, fixture_object.p last", n, last)
	}
	if w.pauses != 0 {
		t.Errorf("%d pauses, want none: nothing waits for these creates", w.pauses)
	}
}

// TestCompletionsOfOneReadAreWrittenTogether: completions the engine
// reported in one read of its output go into one write, not the first alone
// and the others after it landed (issue 25: four creates completed together
// and a kill during the first one's write lost them all).
func TestCompletionsOfOneReadAreWrittenTogether(t *testing.T) {
	t.Parallel()
	rec := &receipt.Receipt{}
	for _, a := range []string{"fixture_object.a", "fixture_object.b", "fixture_object.c", "fixture_object.d"} {
		rec.Ledger = append(rec.Ledger, receipt.Entry{Address: a, Type: "fixture_object", CreatedBy: receipt.CreatedByIntent})
	}
	w := newRecorder()
	c := startCompletions(context.Background(), rec, w.write, func(string) {}, w.hold)
	c.byRead = true
	for _, e := range rec.Ledger {
		c.observe(engine.Event{Type: "apply_complete", Address: e.Address, Action: "create", IDValue: "id-" + e.Address})
	}
	select {
	case <-w.entered:
		t.Fatal("a write began before the read ended")
	default:
	}
	c.readEnd()
	<-w.entered
	w.gate <- nil
	c.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.written) != 1 || len(w.written[0]) != 4 {
		t.Fatalf("writes %+v; want one with the four completions", w.written)
	}
}

// TestCompletionsReportedTogetherShareAWrite: a completion that finds the
// writer idle waits the gather for those reported just after it, each in
// its own read, so creates completed together go into one write.
func TestCompletionsReportedTogetherShareAWrite(t *testing.T) {
	t.Parallel()
	rec := &receipt.Receipt{}
	for _, a := range []string{"fixture_object.a", "fixture_object.b"} {
		rec.Ledger = append(rec.Ledger, receipt.Entry{Address: a, Type: "fixture_object", CreatedBy: receipt.CreatedByIntent})
	}
	w := newRecorder()
	c := startCompletions(context.Background(), rec, w.write, func(string) {}, w.hold)
	c.byRead = true
	c.mu.Lock()
	c.gather = time.Hour // the second comes within it, whatever the machine's speed
	c.mu.Unlock()
	for _, e := range rec.Ledger {
		c.observe(engine.Event{Type: "apply_complete", Address: e.Address, Action: "create", IDValue: "id-" + e.Address})
		c.readEnd()
	}
	select {
	case <-w.entered:
		t.Fatal("a write began before the gather ended")
	default:
	}
	stopped := make(chan struct{})
	go func() { c.stop(); close(stopped) }() // ends the gather: the write goes now
	<-w.entered
	w.gate <- nil
	<-stopped
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.written) != 1 || len(w.written[0]) != 2 {
		t.Fatalf("writes %+v; want one with both completions", w.written)
	}
}

// TestRestAfter checks the pause after a checkpoint write: the floor for a
// write of a small receipt, eight times the write for a large one, so that
// writes nothing cuts short take at most a ninth of an apply.
func TestRestAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ wrote, want time.Duration }{
		{0, checkpointRest},
		{5 * time.Millisecond, checkpointRest},
		{checkpointRest / restPerWrite, checkpointRest},
		{60 * time.Millisecond, 480 * time.Millisecond},
		{time.Second, 8 * time.Second},
	} {
		if got := restAfter(checkpointRest, tc.wrote); got != tc.want {
			t.Errorf("restAfter(%v, %v) = %v, want %v", checkpointRest, tc.wrote, got, tc.want)
		}
	}
}
