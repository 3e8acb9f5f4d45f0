package stackrun_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/stackgraph"
	"github.com/sponson/terraform-provider-sponson/internal/stackrun"
)

// set is network and docs at depth 0, app needing network, web needing app.
func set() []*stackgraph.Stack {
	return []*stackgraph.Stack{
		{Directory: "docs", Depth: 0},
		{Directory: "network", Depth: 0},
		{Directory: "app", Depth: 1, Needs: []string{"network"}},
		{Directory: "web", Depth: 2, Needs: []string{"app", "outside"}},
	}
}

// record runs stacks one at a time and lists the events.
func record(t *testing.T, reverse bool, fail ...string) ([]string, map[string]stackrun.Status) {
	t.Helper()
	var events []string
	status := stackrun.Run(context.Background(), set(), stackrun.Options{
		Reverse: reverse, Parallelism: 1,
		Run: func(_ context.Context, s *stackgraph.Stack) bool {
			for _, f := range fail {
				if f == s.Directory {
					return false
				}
			}
			return true
		},
		Event: func(e stackrun.Event) {
			switch {
			case e.Started:
				events = append(events, "start "+e.Stack.Directory)
			case e.Because != "":
				events = append(events, string(e.Status)+" "+e.Stack.Directory+": "+e.Because)
			default:
				events = append(events, string(e.Status)+" "+e.Stack.Directory)
			}
		},
	})
	return events, status
}

// Dependencies run first; a failure skips what waits for it, transitively,
// and not the independent stacks; a dependency outside the set is none.
func TestRunOrder(t *testing.T) {
	t.Parallel()
	events, _ := record(t, false)
	want := []string{"start docs", "succeeded docs", "start network", "succeeded network", "start app", "succeeded app", "start web", "succeeded web"}
	if d := cmp.Diff(want, events); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	events, status := record(t, false, "network")
	want = []string{"start docs", "succeeded docs", "start network", "failed network",
		"skipped app: it waits for network, which failed", "skipped web: it waits for app, which was skipped"}
	if d := cmp.Diff(want, events); d != "" {
		t.Errorf("events with network failing (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]stackrun.Status{"docs": "succeeded", "network": "failed", "app": "skipped", "web": "skipped"}, status); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
}

// In reverse a stack waits for its dependents.
func TestRunReverse(t *testing.T) {
	t.Parallel()
	events, _ := record(t, true, "app")
	want := []string{"start web", "succeeded web", "start app", "failed app", "skipped network: it waits for app, which failed", "start docs", "succeeded docs"}
	if d := cmp.Diff(want, events); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

// Independent stacks run at the same time, up to the parallelism: both
// stacks of depth 0 are running at once (each waits until the other has
// started), and never more than two.
func TestRunParallel(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	running, most := 0, 0
	var both sync.WaitGroup
	both.Add(2)
	stackrun.Run(context.Background(), set(), stackrun.Options{
		Parallelism: 2,
		Run: func(_ context.Context, s *stackgraph.Stack) bool {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			if s.Depth == 0 {
				both.Done()
				both.Wait()
			}
			mu.Lock()
			running--
			mu.Unlock()
			return true
		},
	})
	if most != 2 {
		t.Errorf("at most %d stacks ran at once, want 2", most)
	}
}

// Once the context is done nothing more starts.
func TestRunInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	status := stackrun.Run(ctx, set(), stackrun.Options{
		Parallelism: 1,
		Run: func(context.Context, *stackgraph.Stack) bool {
			cancel()
			return true
		},
	})
	if d := cmp.Diff(map[string]stackrun.Status{"docs": "succeeded", "network": "skipped", "app": "skipped", "web": "skipped"}, status); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
}
