package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

// Event is one message of the engine's machine-readable UI (`apply -json`)
// that a run acts on: the completion of a resource's change, with the id of
// the object it produced. Both OpenTofu and Terraform emit it as
// "apply_complete" with a hook naming the resource address, the action and
// the new object's id.
type Event struct {
	Type    string // "apply_start", "apply_complete", "apply_errored", ...
	Address string
	Action  string // "create", "update", "delete", "replace", ...
	IDKey   string // the attribute that holds the id, usually "id"
	IDValue string
}

// uiMessage is the subset of a machine-readable UI line that sponson reads.
type uiMessage struct {
	Level   string `json:"@level"`
	Message string `json:"@message"`
	Type    string `json:"type"`
	Hook    struct {
		Resource struct {
			Addr string `json:"addr"`
		} `json:"resource"`
		Action  string `json:"action"`
		IDKey   string `json:"id_key"`
		IDValue string `json:"id_value"`
	} `json:"hook"`
	Outputs    map[string]uiOutput `json:"outputs"`
	Diagnostic *struct {
		Severity string `json:"severity"`
		Summary  string `json:"summary"`
		Detail   string `json:"detail"`
		Address  string `json:"address"`
	} `json:"diagnostic"`
}

// uiOutput is one root module output of an "outputs" message.
type uiOutput struct {
	Sensitive bool            `json:"sensitive"`
	Value     json.RawMessage `json:"value"`
}

// uiStream turns the engine's machine-readable UI back into the lines a
// person reads (each message's own text, diagnostics with their detail) and
// hands every resource event to onEvent as it arrives, so a run can record a
// completed create the moment the engine reports it instead of waiting for
// the engine's next state write (docs/design.md §2.4 "Intent").
type uiStream struct {
	mu      sync.Mutex
	out     io.Writer
	onEvent func(Event)
	// readEnd (nil: none) is called after the lines of each Write, one read
	// of the engine's output.
	readEnd func()
	partial []byte
	// inFlight are the resources whose change started and has not ended,
	// with when a line last spoke of each (heartbeat); now is the clock,
	// nil until a heartbeat starts.
	inFlight map[string]*flight
	now      func() time.Time
	// errors are the engine's error diagnostics as rendered, for the run's
	// error (said).
	errors []string
}

// DefaultHeartbeat is the longest an apply's log stays silent about a
// resource still in flight: OpenTofu's machine-readable UI reports a slow
// create's progress once and then nothing until it ends, so a 20-minute
// database looked hung, and CI systems that kill a silent job (CircleCI
// after 10 minutes) killed it.
const DefaultHeartbeat = 30 * time.Second

// flight is one resource change under way.
type flight struct {
	action      string
	start, last time.Time
}

func newUIStream(out io.Writer, onEvent func(Event)) *uiStream {
	if out == nil {
		out = io.Discard
	}
	return &uiStream{out: out, onEvent: onEvent}
}

// Write accepts any split of the stream; complete lines are handled at once.
func (s *uiStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			if s.readEnd != nil {
				s.readEnd()
			}
			return len(p), nil
		}
		s.line(s.partial[:i])
		s.partial = s.partial[i+1:]
	}
}

// Flush handles a last line without a newline.
func (s *uiStream) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(bytes.TrimSpace(s.partial)) > 0 {
		s.line(s.partial)
	}
	s.partial = nil
}

func (s *uiStream) line(b []byte) {
	var m uiMessage
	if err := json.Unmarshal(b, &m); err != nil {
		// Not a UI message (an engine that printed plain text): pass it on.
		fmt.Fprintf(s.out, "%s\n", b)
		return
	}
	if m.Hook.Resource.Addr != "" && s.onEvent != nil {
		s.onEvent(Event{Type: m.Type, Address: m.Hook.Resource.Addr, Action: m.Hook.Action, IDKey: m.Hook.IDKey, IDValue: m.Hook.IDValue})
	}
	s.track(m)
	s.render(m)
}

// track keeps the resources in flight for the heartbeat: a change starts
// with apply_start, is spoken of by apply_progress, and ends with
// apply_complete or apply_errored.
func (s *uiStream) track(m uiMessage) {
	addr := m.Hook.Resource.Addr
	if s.now == nil || addr == "" {
		return
	}
	switch m.Type {
	case "apply_start":
		now := s.now()
		s.inFlight[addr] = &flight{action: m.Hook.Action, start: now, last: now}
	case "apply_progress":
		if f := s.inFlight[addr]; f != nil {
			f.last = s.now()
		}
	case "apply_complete", "apply_errored":
		delete(s.inFlight, addr)
	}
}

// said adds the engine's error diagnostics to err, the failure of the
// command whose UI this stream read: the machine-readable UI carries them
// on stdout, so the engine's stderr, which terraform-exec puts in its
// error, holds none of them.
func (s *uiStream) said(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil || len(s.errors) == 0 {
		return err
	}
	return fmt.Errorf("%w\n\n%s", err, strings.Join(s.errors, "\n\n"))
}

// heartbeat starts the beat of an apply: every resource still in flight
// is spoken of at least once every interval, in the engine's own words
// ("null_resource.a: Still creating... [40s elapsed]"), whether or not the
// engine said anything. It returns the function that stops it.
func (s *uiStream) heartbeat(interval time.Duration, now func() time.Time) (stop func()) {
	if interval <= 0 {
		return func() {}
	}
	s.mu.Lock()
	s.now, s.inFlight = now, map[string]*flight{}
	s.mu.Unlock()
	// Checked every tick, a sixth of the interval: a resource unspoken of
	// for the interval less two ticks is spoken of at the next one, so no
	// resource goes longer than the interval less a tick without a line
	// (20 to 25 s at the default). The tick to spare keeps the promise
	// when a tick comes late on a loaded runner, and when the line before
	// was the engine's, whose elapsed mark is its own clock's: the log's
	// marks then still step by less than the interval.
	tick := max(interval/6, time.Second)
	t := time.NewTicker(tick)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.beat(interval - 2*tick)
			}
		}
	}()
	return func() {
		t.Stop()
		close(done)
	}
}

// beat speaks of every resource in flight that nothing spoke of for at
// least quiet, in the order of their addresses.
func (s *uiStream) beat(quiet time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	addrs := make([]string, 0, len(s.inFlight))
	for a, f := range s.inFlight {
		if now.Sub(f.last) >= quiet {
			addrs = append(addrs, a)
		}
	}
	sort.Strings(addrs)
	for _, a := range addrs {
		f := s.inFlight[a]
		fmt.Fprintf(s.out, "%s: Still %s... [%s elapsed]\n", a, stillDoing(f.action), now.Sub(f.start).Round(time.Second))
		f.last = now
	}
}

// stillDoing is the engine's word for a change under way.
func stillDoing(action string) string {
	switch action {
	case "create":
		return "creating"
	case "update":
		return "modifying"
	case "delete":
		return "destroying"
	case "read":
		return "reading"
	}
	return "applying"
}

// render prints a message as the engine's human UI would show it.
func (s *uiStream) render(m uiMessage) {
	switch {
	case m.Type == "version", m.Type == "planned_change":
		// The human UI of an apply of a saved plan prints neither: the
		// plan was shown when it was made.
		return
	case m.Type == "outputs":
		renderOutputs(s.out, m.Outputs)
	case m.Type == "change_summary":
		fmt.Fprintf(s.out, "\n%s\n", m.Message)
	case m.Diagnostic != nil:
		d := m.Diagnostic
		label := "Warning"
		if d.Severity == "error" {
			label = "Error"
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s: %s\n", label, d.Summary)
		if d.Address != "" {
			fmt.Fprintf(&b, "\n  with %s\n", d.Address)
		}
		if d.Detail != "" {
			fmt.Fprintf(&b, "\n%s\n", indent(d.Detail))
		}
		fmt.Fprintf(s.out, "\n%s\n", b.String())
		if d.Severity == "error" {
			s.errors = append(s.errors, strings.TrimRight(b.String(), "\n"))
		}
	case m.Message != "":
		fmt.Fprintln(s.out, m.Message)
	}
}

// renderOutputs prints the outputs as the human UI does after an apply:
// sorted by name, sensitive values hidden.
func renderOutputs(out io.Writer, outputs map[string]uiOutput) {
	if len(outputs) == 0 {
		return
	}
	names := make([]string, 0, len(outputs))
	for name := range outputs {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Fprintln(out, "\nOutputs:")
	fmt.Fprintln(out)
	for _, name := range names {
		o := outputs[name]
		value := string(o.Value)
		switch {
		case o.Sensitive:
			value = "<sensitive>"
		case len(o.Value) == 0:
			value = "(known after apply)"
		}
		fmt.Fprintf(out, "%s = %s\n", name, value)
	}
}

func indent(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "\n")
}
