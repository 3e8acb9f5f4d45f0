package e2e_test

import (
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// The attacks that run once per store (the crash, kill and succession
// tests) start their store here, by the name of their subtest. Each
// subtest starts its own: its own server on loopback, its own bucket,
// container or database, so that the stores' attacks run side by side.

// storeReader is what a test reads back of a store: receipts as a run
// reads them (store.Latest) and states.
type storeReader interface {
	store.LatestReader
	store.StateReader
}

// e2eStore is one store of a test.
type e2eStore struct {
	name  string
	flags []string // --store=URL; none for the file store of the run's directory
	env   []string // what a run needs to reach it: credentials, emulator, state key
	// check reads the store back; nil for the file store (read in the
	// run's directory) and the git store (read through sponson).
	check storeReader
}

// startStore starts the store a subtest names: file, git, s3, postgres,
// gcs or azblob. prefix is the prefix of a bucket or container store.
func startStore(t *testing.T, name, prefix string) *e2eStore {
	t.Helper()
	s := &e2eStore{name: name}
	switch name {
	case "file":
	case "git":
		_, flag, env := gitRemote(t)
		s.flags, s.env = []string{flag}, env
	case "s3":
		p := newS3E2E(t, prefix)
		s.flags, s.env, s.check = []string{"--store=" + p.url}, p.env, p.check
	case "postgres":
		p := newPgE2E(t)
		s.flags, s.check = []string{"--store=" + p.url}, p.check
	case "gcs":
		p := newGCSE2E(t, prefix)
		s.flags, s.env, s.check = []string{"--store=" + p.url}, p.env, p.check
	case "azblob":
		p := newAzE2E(t, prefix)
		s.flags, s.env, s.check = []string{"--store=" + p.url}, p.env, p.check
	default:
		t.Fatalf("no store %q", name)
	}
	return s
}

// latest is the scope's latest receipt; dir is the run's directory, where
// the file store is.
func (s *e2eStore) latest(t *testing.T, dir, env, scope string) *receipt.Receipt {
	t.Helper()
	if s.name == "file" {
		return latestReceipt(t, dir, env, scope)
	}
	r, err := store.Latest(t.Context(), s.reader(t), store.Key{Stack: e2eStack, Environment: env, Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	if r == nil {
		t.Fatalf("%s/%s has no receipt in the %s store", env, scope, s.name)
	}
	return r
}

// stateResources is stateResources of the scope's state in the store.
func (s *e2eStore) stateResources(t *testing.T, dir, env, scope string) map[string]map[string]any {
	t.Helper()
	if s.name == "file" {
		return stateResources(t, dir, env, scope)
	}
	st, err := s.reader(t).ReadState(t.Context(), store.Key{Stack: e2eStack, Environment: env, Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	if st == nil {
		return map[string]map[string]any{}
	}
	return parseStateResources(t, st)
}

func (s *e2eStore) reader(t *testing.T) storeReader {
	t.Helper()
	if s.check == nil {
		t.Fatalf("the test cannot read the %s store back", s.name)
	}
	return s.check
}
