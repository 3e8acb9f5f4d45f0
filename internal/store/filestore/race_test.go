package filestore_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
)

// The race tests run the test binary itself as child processes that compete
// for one scope, the way concurrent CI jobs on one machine would. Every child
// loops: acquire (retrying while held) → read the latest receipt → write a
// receipt whose ledger is the one read plus one entry → release. The ledger
// length is the counter: a lost or doubled increment, or a write landing
// under a lease that was no longer held, shows up as a ledger that does not
// equal the acknowledged writes, in order.
//
// SPONSON_RACE_PROCS and SPONSON_RACE_ITERS raise the load for manual runs
// (the defaults keep `go test -race` well under 20 s on two cores).
const childEnv = "SPONSON_FILESTORE_RACE_CHILD"

var raceKey = store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-race"}

func TestMain(m *testing.M) {
	if cfg := os.Getenv(childEnv); cfg != "" {
		os.Exit(raceChild(cfg))
	}
	os.Exit(m.Run())
}

// raceConfig is what the parent hands a child, as JSON in childEnv.
type raceConfig struct {
	Root  string        `json:"root"`
	Child int           `json:"child"`
	Iters int           `json:"iters"`
	TTL   time.Duration `json:"ttl"`
	// Every Overrun-th iteration sleeps twice the TTL between reading and
	// writing; 0 never does.
	Overrun int `json:"overrun"`
}

// event is one line a child prints on stdout.
type event struct {
	Kind      string `json:"kind"` // grant, ack, fenced, release, releaseLost
	Holder    string `json:"holder"`
	Token     int64  `json:"token"`
	Counter   int    `json:"counter,omitempty"` // ledger length after an ack
	Preempted string `json:"preempted,omitempty"`
	Overrun   bool   `json:"overrun,omitempty"`
}

func raceChild(config string) int {
	var cfg raceConfig
	if err := json.Unmarshal([]byte(config), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "child config:", err)
		return 2
	}
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "child %d: "+format+"\n", append([]any{cfg.Child}, args...)...)
		return 1
	}
	s, err := filestore.Open(cfg.Root)
	if err != nil {
		return fail("open: %v", err)
	}
	// An event that cannot be written would throw off the parent's
	// accounting, so a failed write ends the child.
	out := json.NewEncoder(os.Stdout) // one write per event: nothing is lost if we die
	ctx := context.Background()
	for i := range cfg.Iters {
		holder := fmt.Sprintf("c%d-i%03d", cfg.Child, i)
		var g store.Grant
		for {
			g, err = s.Acquire(ctx, raceKey, holder, cfg.TTL)
			var held *store.HeldError
			if errors.As(err, &held) {
				time.Sleep(time.Duration(200+rand.IntN(800)) * time.Microsecond)
				continue
			}
			if err != nil {
				return fail("acquire: %v", err)
			}
			break
		}
		ev := event{Kind: "grant", Holder: holder, Token: g.Lease.Token}
		if g.Preempted != nil {
			ev.Preempted = g.Preempted.Holder
		}
		if err := out.Encode(ev); err != nil {
			return fail("report: %v", err)
		}

		prev, err := s.LatestReceipt(ctx, raceKey)
		if err != nil {
			return fail("read: %v", err)
		}
		overrun := cfg.Overrun > 0 && i%cfg.Overrun == cfg.Overrun-1
		if overrun {
			time.Sleep(2 * cfg.TTL)
		}
		r := &receipt.Receipt{
			Version: receipt.Version, RunID: holder, Command: "apply",
			Stack: raceKey.Stack, Environment: raceKey.Environment, Scope: raceKey.Scope,
			Status: receipt.StatusApplied, StartedAt: time.Now().UTC(), Ledger: []receipt.Entry{},
		}
		if prev != nil {
			r.Ledger = prev.Ledger
		}
		r.Ledger = append(r.Ledger, receipt.Entry{
			Identity: holder, Address: "terraform_data.n", Provider: "terraform.io/builtin/terraform",
			Type: "terraform_data", ID: strconv.FormatInt(g.Lease.Token, 10), CreatedBy: receipt.CreatedBySponson,
		})
		switch err := s.WriteReceipt(ctx, g.Lease, r); {
		case err == nil:
			ev = event{Kind: "ack", Holder: holder, Token: g.Lease.Token, Counter: len(r.Ledger), Overrun: overrun}
		case errors.Is(err, store.ErrLeaseLost):
			ev = event{Kind: "fenced", Holder: holder, Token: g.Lease.Token, Overrun: overrun}
		default:
			return fail("write: %v", err)
		}
		if err := out.Encode(ev); err != nil {
			return fail("report: %v", err)
		}

		switch err := s.Release(ctx, g.Lease); {
		case err == nil:
			ev = event{Kind: "release", Holder: holder, Token: g.Lease.Token}
		case errors.Is(err, store.ErrLeaseLost):
			ev = event{Kind: "releaseLost", Holder: holder, Token: g.Lease.Token}
		default:
			return fail("release: %v", err)
		}
		if err := out.Encode(ev); err != nil {
			return fail("report: %v", err)
		}
	}
	return 0
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q is not a positive integer", name, v)
	}
	return n
}

// TestMultiProcessRace: long TTL, every holder finishes in time. Every write
// must be acknowledged and counted once, in token order.
func TestMultiProcessRace(t *testing.T) {
	procs, iters := envInt(t, "SPONSON_RACE_PROCS", 4), envInt(t, "SPONSON_RACE_ITERS", 50)
	if testing.Short() {
		iters = 10
	}
	res := runRace(t, procs, iters, time.Minute, 0)
	if res.count("fenced") != 0 || res.count("releaseLost") != 0 {
		t.Errorf("%d writes fenced and %d releases lost with a TTL nobody outlived", res.count("fenced"), res.count("releaseLost"))
	}
	if res.final.Holder != "" {
		t.Errorf("lease still held by %q after every child released", res.final.Holder)
	}
	if n := res.preemptions(); n != 0 {
		t.Errorf("%d takeovers with a TTL nobody outlived", n)
	}
}

// TestMultiProcessRaceExpiry: a 30 ms TTL, and every 5th holder sleeps twice
// the TTL between its read and its write. Those writes must be refused (the
// store's clock says the lease expired, whether or not another child took
// over meanwhile); others may be refused too when the machine is slow, but
// the counter must still equal the acknowledged writes.
func TestMultiProcessRaceExpiry(t *testing.T) {
	procs, iters := envInt(t, "SPONSON_RACE_PROCS", 4), envInt(t, "SPONSON_RACE_ITERS", 50)
	if testing.Short() {
		iters = 10
	}
	res := runRace(t, procs, iters, 30*time.Millisecond, 5)
	overruns := 0
	for _, ev := range res.events {
		if ev.Overrun {
			overruns++
			if ev.Kind == "ack" {
				t.Errorf("write of %s (token %d) acknowledged after sleeping past its TTL", ev.Holder, ev.Token)
			}
		}
	}
	if want := procs * (iters / 5); overruns != want {
		t.Errorf("%d overrunning holders, want %d", overruns, want)
	}
	if res.count("fenced") < overruns {
		t.Errorf("%d writes fenced, fewer than the %d overrunning holders", res.count("fenced"), overruns)
	}
}

type raceResult struct {
	events []event
	final  store.LeaseInfo
}

func (r raceResult) count(kind string) int {
	n := 0
	for _, ev := range r.events {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}

func (r raceResult) preemptions() int {
	n := 0
	for _, ev := range r.events {
		if ev.Kind == "grant" && ev.Preempted != "" {
			n++
		}
	}
	return n
}

// runRace runs procs children of iters cycles each on one scope and checks
// what must hold whatever the timing: tokens granted once each, 1..grants;
// acknowledged writes counted exactly once, in strictly increasing token
// order; the final ledger equal to the acknowledged writes; a per-run receipt
// file for every acknowledged write and for nothing else.
func runRace(t *testing.T, procs, iters int, ttl time.Duration, overrun int) raceResult {
	t.Helper()
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()

	start := time.Now()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		events []event
	)
	for c := range procs {
		cfg, _ := json.Marshal(raceConfig{Root: root, Child: c, Iters: iters, TTL: ttl, Overrun: overrun})
		cmd := exec.CommandContext(ctx, os.Args[0])
		cmd.Env = append(os.Environ(), childEnv+"="+string(cfg))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatalf("start child %d: %v", c, err)
		}
		wg.Go(func() {
			err := cmd.Wait()
			if err != nil {
				t.Errorf("child %d: %v\n%s", c, err, stderr.String())
			}
			sc := bufio.NewScanner(&stdout)
			var mine []event
			for sc.Scan() {
				var ev event
				if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
					t.Errorf("child %d printed %q: %v", c, sc.Text(), err)
					continue
				}
				mine = append(mine, ev)
			}
			mu.Lock()
			events = append(events, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if t.Failed() {
		t.FailNow()
	}

	res := raceResult{events: events}
	var grants, acks []event
	for _, ev := range events {
		switch ev.Kind {
		case "grant":
			grants = append(grants, ev)
		case "ack":
			acks = append(acks, ev)
		}
	}

	// Every cycle got exactly one grant, and the tokens are 1..n, each once.
	if len(grants) != procs*iters {
		t.Errorf("%d grants, want %d", len(grants), procs*iters)
	}
	tokens := make([]int64, 0, len(grants))
	for _, g := range grants {
		tokens = append(tokens, g.Token)
	}
	slices.Sort(tokens)
	for i, tok := range tokens {
		if tok != int64(i+1) {
			t.Fatalf("granted tokens sorted are %v..., want 1..%d each once (token %d at position %d)", tokens[:min(len(tokens), i+3)], len(tokens), tok, i)
		}
	}

	// Acknowledged writes: counters 1..acks, tokens strictly increasing in
	// write order.
	sort.Slice(acks, func(i, j int) bool { return acks[i].Counter < acks[j].Counter })
	for i, a := range acks {
		if a.Counter != i+1 {
			t.Fatalf("acknowledged write %d of %d has counter %d: an increment was lost or doubled", i+1, len(acks), a.Counter)
		}
		if i > 0 && a.Token <= acks[i-1].Token {
			t.Errorf("write %d by %s has token %d, not above the previous write's %d", a.Counter, a.Holder, a.Token, acks[i-1].Token)
		}
	}

	// What the store holds equals what was acknowledged, in order.
	s, err := filestore.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	latest, err := s.LatestReceipt(t.Context(), raceKey)
	if err != nil {
		t.Fatal(err)
	}
	var ledger []receipt.Entry
	if latest != nil {
		ledger = latest.Ledger
	}
	if len(ledger) != len(acks) {
		t.Fatalf("final counter %d, acknowledged writes %d", len(ledger), len(acks))
	}
	for i, e := range ledger {
		if e.Identity != acks[i].Holder || e.ID != strconv.FormatInt(acks[i].Token, 10) {
			t.Errorf("ledger entry %d is %s with token %s, want the acknowledged write of %s with token %d", i, e.Identity, e.ID, acks[i].Holder, acks[i].Token)
		}
	}
	entries, err := os.ReadDir(filepath.Join(root, "@stacks", raceKey.Environment, store.StackSegment(raceKey.Stack), raceKey.Scope, "receipts"))
	if err != nil {
		t.Fatal(err)
	}
	var runFiles, ackFiles []string
	for _, e := range entries {
		runFiles = append(runFiles, e.Name())
	}
	for _, a := range acks {
		ackFiles = append(ackFiles, a.Holder+".json")
	}
	slices.Sort(ackFiles)
	if !slices.Equal(runFiles, ackFiles) {
		t.Errorf("receipts/ holds %d files, want exactly the %d acknowledged runs (refused writes leave nothing)", len(runFiles), len(ackFiles))
	}

	res.final, err = s.ReadLease(t.Context(), raceKey)
	if err != nil {
		t.Fatal(err)
	}
	if res.final.Token != int64(len(grants)) {
		t.Errorf("final token %d, want %d (one per grant)", res.final.Token, len(grants))
	}
	t.Logf("%d procs × %d cycles, TTL %s: %d grants (%d takeovers), %d writes acknowledged, %d fenced, %d releases lost; %s, %.0f cycles/s",
		procs, iters, ttl, len(grants), res.preemptions(), len(acks), res.count("fenced"), res.count("releaseLost"),
		elapsed.Round(time.Millisecond), float64(len(grants))/elapsed.Seconds())
	return res
}
