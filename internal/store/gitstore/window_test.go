package gitstore_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store/gitstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

// BenchmarkCheckpointWrite measures the checkpoint write of a run
// (docs/design.md §2.4 "Intent"): a fenced receipt write by the lease
// holder, one completion more each time, on a store that holds the lease
// and knows the tip (as during an apply). write-p50-ms is the time from
// the call to the write landed on the remote; spawns is how many git
// processes the store starts per write; and from git's own trace (trace2),
// for every git process the write runs, here and at the (local, bare)
// remote, how many per write and the median of their wall time. Run with
//
//	go test -run '^$' -bench CheckpointWrite -benchtime 30x ./internal/store/gitstore/
func BenchmarkCheckpointWrite(b *testing.B) {
	trace := filepath.Join(b.TempDir(), "trace2.json")
	// gitcli.Environ passes GIT_TRACE2_EVENT on, and the local transport
	// hands it to the remote's receive-pack and what it runs.
	b.Setenv("GIT_TRACE2_EVENT", trace)
	ctx := context.Background()
	s := openStore(b, newRemote(b))
	g := mustAcquire(b, s, pr1, "run-1", time.Hour)
	rec := storetest.NewReceipt(pr1, "run-1", 20)
	rec.Status = receipt.StatusRunning
	if err := s.WriteReceipt(ctx, g.Lease, rec); err != nil {
		b.Fatal(err)
	}
	if err := os.Truncate(trace, 0); err != nil {
		b.Fatal(err)
	}
	before := gitstore.Spawned(s)
	var writes []time.Duration
	n := 0
	for i := 0; b.Loop(); i++ {
		rec.Completed = append(rec.Completed, receipt.Completion{Address: fmt.Sprintf("fixture_object.o[%d]", i), ID: fmt.Sprint(i), Action: "create"})
		t0 := time.Now()
		if err := s.WriteReceipt(ctx, g.Lease, rec); err != nil {
			b.Fatal(err)
		}
		writes = append(writes, time.Since(t0))
		n++
	}
	percentiles(b, "write", writes)
	spawned := 0
	for sub, k := range gitstore.Spawned(s) {
		spawned += k - before[sub]
	}
	b.ReportMetric(float64(spawned)/float64(n), "spawns/write")
	procs := readTrace2(b, trace)
	total := 0
	for _, name := range sortedKeys(procs) {
		ds := procs[name]
		total += len(ds)
		p50, _ := storetest.Percentiles(ds)
		b.ReportMetric(float64(len(ds))/float64(n), name+"/write")
		b.ReportMetric(p50, name+"-p50-ms")
	}
	b.ReportMetric(float64(total)/float64(n), "processes/write")
}

// readTrace2 returns the wall time of every git process in a trace2 event
// file, by its command ("push", "receive-pack", ...).
func readTrace2(b *testing.B, path string) map[string][]time.Duration {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	names := map[string]string{}
	took := map[string]time.Duration{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			Event string   `json:"event"`
			SID   string   `json:"sid"`
			Argv  []string `json:"argv"`
			Name  string   `json:"name"`
			TAbs  float64  `json:"t_abs"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch ev.Event {
		case "start":
			if names[ev.SID] == "" && len(ev.Argv) > 1 {
				names[ev.SID] = strings.TrimPrefix(ev.Argv[1], "git-")
			}
		case "cmd_name":
			names[ev.SID] = ev.Name
		case "atexit":
			took[ev.SID] = time.Duration(ev.TAbs * float64(time.Second))
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	out := map[string][]time.Duration{}
	for sid, d := range took {
		out[names[sid]] = append(out[names[sid]], d)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
