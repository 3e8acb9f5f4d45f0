package scoperun

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
	"github.com/sponson/terraform-provider-sponson/internal/store/gitstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/pgstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/pgstore/pgtest"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

// BenchmarkCheckpointWindow measures the window of issue 25 on the git
// store (a local bare remote): four creates completed together, reported
// 2 ms apart, each in its own read of the engine's output, each timed from
// the moment it is read to the moment a write holding it has landed; with
// the gather (as the run does) and the way it was before, the writer woken
// at the first completion and the others waiting for its write to land.
// Both run in turn in the same benchmark, so their medians compare. Run
// with
//
//	go test -run '^$' -bench CheckpointWindow -benchtime 20x ./internal/scoperun/
func BenchmarkCheckpointWindow(b *testing.B) {
	remote := filepath.Join(b.TempDir(), "origin.git")
	if out, err := exec.Command("git", "init", "--bare", "--quiet", remote).CombinedOutput(); err != nil {
		b.Fatalf("git init: %v\n%s", err, out)
	}
	ctx := context.Background()
	s, err := gitstore.Open(ctx, remote, gitstore.WithPlaintextState())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	key := store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-7"}
	g, err := s.Acquire(ctx, key, "run-1", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	base := storetest.NewReceipt(key, "run-1", 20)
	base.Status = receipt.StatusRunning
	for k := range 4 {
		base.Ledger = append(base.Ledger, receipt.Entry{Address: fmt.Sprintf("fixture_object.o[%d]", k), Type: "fixture_object", CreatedBy: receipt.CreatedByIntent})
	}
	if err := s.WriteReceipt(ctx, g.Lease, base); err != nil {
		b.Fatal(err)
	}
	windows := map[bool][]time.Duration{}
	writes := map[bool]int{}
	rounds := 0
	for b.Loop() {
		rounds++
		for _, byRead := range []bool{false, true} {
			rec := *base
			rec.Completed = nil
			var mu sync.Mutex
			read := map[string]time.Time{}
			write := func(ctx context.Context, done []receipt.Completion) error {
				data, err := receipt.MarshalJournal(rec.RunID, done)
				if err == nil {
					err = s.WriteRecord(ctx, g.Lease, store.JournalRecord, data)
				}
				landed := time.Now()
				mu.Lock()
				defer mu.Unlock()
				writes[byRead]++
				for _, c := range done {
					if t, ok := read[c.Address]; ok {
						windows[byRead] = append(windows[byRead], landed.Sub(t))
						delete(read, c.Address)
					}
				}
				return err
			}
			c := startCompletions(ctx, &rec, write, func(m string) { b.Fatal(m) }, nil)
			c.byRead = byRead
			if !byRead {
				c.gather = 0 // before: no gather
			}
			for k := range 4 {
				if k > 0 {
					time.Sleep(2 * time.Millisecond)
				}
				addr := fmt.Sprintf("fixture_object.o[%d]", k)
				mu.Lock()
				read[addr] = time.Now()
				mu.Unlock()
				c.observe(engine.Event{Type: "apply_complete", Address: addr, Action: "create", IDValue: fmt.Sprint(k)})
				c.readEnd()
			}
			// Wait for the writes to land before stopping, which would
			// write what is pending at once.
			for {
				mu.Lock()
				n := len(read)
				mu.Unlock()
				if n == 0 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			c.stop()
		}
	}
	for _, byRead := range []bool{false, true} {
		name := "before"
		if byRead {
			name = "gathered"
		}
		p50, p99 := storetest.Percentiles(windows[byRead])
		b.ReportMetric(p50, name+"-window-p50-ms")
		b.ReportMetric(p99, name+"-window-max-ms")
		b.ReportMetric(float64(writes[byRead])/float64(rounds), name+"-writes/round")
	}
}

// BenchmarkJournalWrite measures the floor of issue 48 on each store: one
// fenced write of the journal (four completions), the write a kill of the
// whole job can interrupt, losing what it carries. file on a temporary
// directory, git on a local bare remote, PostgreSQL on a local server
// (skipped without one). Run with
//
//	go test -run '^$' -bench JournalWrite -benchtime 30x ./internal/scoperun/
func BenchmarkJournalWrite(b *testing.B) {
	ctx := context.Background()
	key := store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-7"}
	stores := map[string]func(b *testing.B) store.Store{
		"file": func(b *testing.B) store.Store {
			s, err := filestore.Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
		"git": func(b *testing.B) store.Store {
			remote := filepath.Join(b.TempDir(), "origin.git")
			if out, err := exec.Command("git", "init", "--bare", "--quiet", remote).CombinedOutput(); err != nil {
				b.Fatalf("git init: %v\n%s", err, out)
			}
			s, err := gitstore.Open(ctx, remote, gitstore.WithPlaintextState())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		},
		"postgres": func(b *testing.B) store.Store {
			srv := pgtest.Own(b)
			s, err := pgstore.Open(ctx, srv.DSN(srv.NewDatabase(b)))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		},
	}
	for _, name := range []string{"file", "git", "postgres"} {
		b.Run(name, func(b *testing.B) {
			s := stores[name](b)
			g, err := s.Acquire(ctx, key, "run-1", time.Hour)
			if err != nil {
				b.Fatal(err)
			}
			base := storetest.NewReceipt(key, "run-1", 20)
			base.Status = receipt.StatusRunning
			if err := s.WriteReceipt(ctx, g.Lease, base); err != nil {
				b.Fatal(err)
			}
			var done []receipt.Completion
			var took []time.Duration
			for b.Loop() {
				for k := range 4 {
					done = append(done, receipt.Completion{Address: fmt.Sprintf("fixture_object.o[%d]", len(done)+k), ID: fmt.Sprintf("id-%d", len(done)+k), Action: "create"})
				}
				data, err := receipt.MarshalJournal("run-1", done)
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := s.WriteRecord(ctx, g.Lease, store.JournalRecord, data); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "write-p50-ms")
			b.ReportMetric(float64(took[len(took)*9/10].Microseconds())/1000, "write-p90-ms")
		})
	}
}
