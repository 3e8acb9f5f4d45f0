package overview_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/overview"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
)

// countingHistory counts the timelines read from the store, by scope.
type countingHistory struct {
	*filestore.Store
	mu    sync.Mutex
	reads map[string]int
}

func (c *countingHistory) ReceiptHistory(ctx context.Context, key store.Key) ([]*receipt.Receipt, error) {
	c.mu.Lock()
	c.reads[key.Environment+"/"+key.Stack+"/"+key.Scope]++
	c.mu.Unlock()
	return c.Store.ReceiptHistory(ctx, key)
}

func (c *countingHistory) count() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.reads {
		out[k] = v
	}
	return out
}

// With Timelines (serve's), a scope's timeline is read from the store
// again only when its last run changed, and the model is the one a build
// without it makes.
func TestBuildKeepsTimelines(t *testing.T) {
	t.Parallel()
	in, write := fixtureInput(t)
	counting := &countingHistory{Store: in.Store.(*filestore.Store), reads: map[string]int{}}
	in.Store = counting
	in.Timelines = &overview.Timelines{}
	build := func() *overview.Model {
		t.Helper()
		m, err := overview.Build(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	timelines := func(m *overview.Model) map[string][]overview.Run {
		out := map[string][]overview.Run{}
		for _, s := range m.Scopes {
			out[s.Environment+"/"+s.Stack+"/"+s.Scope] = s.Timeline
		}
		return out
	}
	first := build()
	once := counting.count()
	if len(once) != len(fixture) {
		t.Fatalf("the first build read %d timelines, want the fixture's %d: %v", len(once), len(fixture), once)
	}
	second := build()
	if d := cmp.Diff(once, counting.count()); d != "" {
		t.Errorf("the second build read timelines again (-before +after):\n%s", d)
	}
	if d := cmp.Diff(timelines(first), timelines(second)); d != "" {
		t.Errorf("the timelines kept differ from those read (-read +kept):\n%s", d)
	}

	// A new run of preview's network main: its timeline alone is read
	// again, and ends with the run.
	main := fixture[0]
	main.runs = append(append([]run{}, main.runs...), run{command: "apply", status: receipt.StatusApplied, ago: time.Hour, branch: "main", actor: "ada", commit: "7777777abcd", owns: 3})
	write(main)
	third := build()
	want := once
	want["preview/acme/network/main"]++
	if d := cmp.Diff(want, counting.count()); d != "" {
		t.Errorf("after a run of one scope (-want +got):\n%s", d)
	}
	got := timelines(third)["preview/acme/network/main"]
	if len(got) != 3 || got[2].Commit != "7777777abcd" {
		t.Errorf("preview/acme/network/main's timeline after its run: %+v, want 3 runs ending with the new one", got)
	}
	in.Timelines = nil
	if d := cmp.Diff(timelines(build()), timelines(third)); d != "" {
		t.Errorf("the model with timelines kept differs from one without (-without +with):\n%s", d)
	}
}
