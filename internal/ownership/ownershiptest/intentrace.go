// Package ownershiptest holds the race test of the intent race rule
// (ownership.UnderIntentLease), which every store backend runs on two of
// its own handles: the rule is ownership's, the race is each backend's.
package ownershiptest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

// IntentRace is the race test of the intent race rule (issue 12 item 6): in
// every round two scopes, each on its own handle of one backend (as two CI
// jobs would be), plan to create the same object at the same moment. Each
// does what a run's checkpoint does, with the real building blocks: under
// the environment's intent lease (ownership.UnderIntentLease) it reads the
// ownership index for the object's identity and, finding no other scope's
// entry, writes its receipt with the intent, fenced by its scope lease. In
// every round exactly one of them must write, and the other must see the
// winner's intent.
//
// Nothing waits on time: both contenders start together from one barrier and
// the round ends when both have decided; the lease machinery only polls.
// rounds is the default, sized for `make test`; SPONSON_INTENT_RACE_ROUNDS
// overrides it for the thousands of rounds of a real measurement, e.g.
//
//	SPONSON_INTENT_RACE_ROUNDS=2000 go test -run TestIntentRace ./internal/store/pgstore/
func IntentRace(t *testing.T, rounds int, a, b Store) {
	t.Helper()
	rounds = roundsFromEnv(t, rounds)
	cs := contenders(t, a, b)
	failures := 0
	for round := range rounds {
		wrote, errs := race(t.Context(), cs, round)
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, contender %d: %v", round, i, err)
			}
		}
		if wrote[0] == wrote[1] {
			failures++
			t.Errorf("round %d: contender 0 wrote %v, contender 1 wrote %v; want exactly one", round, wrote[0], wrote[1])
		}
	}
	t.Logf("%d rounds, %d with other than exactly one creator", rounds, failures)
}

// raceEnv is the environment both contenders' scopes are in: the intent
// lease and the ownership index are per environment.
const raceEnv = "preview"

// raceLease is the intent lease's configuration: polling every millisecond,
// so that the race is decided by the lease, not by a wait.
var raceLease = lease.Config{TTL: time.Minute, PollInterval: time.Millisecond, WaitTimeout: 10 * time.Minute}

// roundsFromEnv is rounds, or SPONSON_INTENT_RACE_ROUNDS when set.
func roundsFromEnv(t *testing.T, rounds int) int {
	t.Helper()
	v := os.Getenv("SPONSON_INTENT_RACE_ROUNDS")
	if v == "" {
		return rounds
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("SPONSON_INTENT_RACE_ROUNDS: %v", err)
	}
	return n
}

// contender is one scope of the race, on its own handle, holding its scope
// lease for every round: the fence of its receipt writes.
type contender struct {
	i     int
	st    Store
	key   store.Key
	lease store.Lease
}

// contenders takes one scope lease on each handle.
func contenders(t *testing.T, a, b Store) [2]*contender {
	t.Helper()
	var cs [2]*contender
	for i, st := range []Store{a, b} {
		k := store.Key{Stack: storetest.Stack, Environment: raceEnv, Scope: fmt.Sprintf("pr-race-%d", i)}
		g, err := st.Acquire(t.Context(), k, fmt.Sprintf("run-race-%d", i), time.Hour)
		if err != nil {
			t.Fatalf("Acquire(%s): %v", k, err)
		}
		cs[i] = &contender{i: i, st: st, key: k, lease: g.Lease}
	}
	return cs
}

// race runs one round: both contenders released from one barrier, each
// claiming the round's object. It returns which wrote, and the errors other
// than a refusal.
func race(ctx context.Context, cs [2]*contender, round int) (wrote [2]bool, errs [2]error) {
	id := fmt.Sprintf("fixture|fixture_object|name=\"race-%d\"", round)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			wrote[i], errs[i] = c.claim(ctx, round, id)
		}()
	}
	close(start)
	wg.Wait()
	return wrote, errs
}

// claim does what a run's checkpoint does for a create: under the intent
// lease, read the index for id and, when no other scope holds it, write a
// receipt with the intent. It reports whether it wrote; another scope's
// entry is a refusal, not an error.
func (c *contender) claim(ctx context.Context, round int, id string) (bool, error) {
	wrote := false
	check := func(ctx context.Context) error {
		owners, err := c.st.Owners(ctx, raceEnv, []string{id})
		if err != nil {
			return err
		}
		for _, o := range owners {
			if o.Scope != c.key.Scope {
				return errTaken
			}
		}
		return nil
	}
	write := func(ctx context.Context) error {
		rec := storetest.NewReceipt(c.key, fmt.Sprintf("run-%d-%d", round, c.i), 0)
		rec.Status = receipt.StatusRunning
		rec.Ledger = []receipt.Entry{{Identity: id, Address: `fixture_object.o["x"]`, Provider: "fixture", Type: "fixture_object", CreatedBy: receipt.CreatedByIntent}}
		if err := c.st.WriteReceipt(ctx, c.lease, rec); err != nil {
			return err
		}
		wrote = true
		return nil
	}
	holder := fmt.Sprintf("intents-%d-%d", round, c.i)
	if _, err := ownership.UnderIntentLease(ctx, c.st, raceEnv, holder, raceLease, check, write); err != nil && err != errTaken {
		return wrote, err
	}
	return wrote, nil
}

// Store is what the race takes of a backend: the leases, the fenced
// receipt write and the ownership index.
type Store interface {
	lease.Store
	store.Index
}

// errTaken is a check's refusal: another scope holds the identity.
var errTaken = fmt.Errorf("taken")
