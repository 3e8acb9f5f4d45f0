package e2e_test

import (
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/azblobstore/azuritetest"
	"github.com/sponson/terraform-provider-sponson/internal/store/gcsstore/gcstest"
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
	// at is another store on the same server, at another prefix (nil:
	// the store has no server of its own to share, or no prefix).
	at func(t *testing.T, prefix string) *e2eStore
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
		srv := gcstest.Start(t)
		return s.sharing(t, prefix, func(t *testing.T, prefix string) (string, []string, storeReader) {
			p := gcsAt(t, srv, prefix)
			return p.url, p.env, p.check
		})
	case "azblob":
		srv := azuritetest.Start(t)
		return s.sharing(t, prefix, func(t *testing.T, prefix string) (string, []string, storeReader) {
			p := azAt(t, srv, prefix)
			return p.url, p.env, p.check
		})
	default:
		t.Fatalf("no store %q", name)
	}
	return s
}

// sharing makes s a store whose server other stores share (s.at), each at
// a prefix of its own, and returns the one at prefix. open opens the store
// at a prefix: its URL, a run's environment and its reader.
func (s *e2eStore) sharing(t *testing.T, prefix string, open func(t *testing.T, prefix string) (url string, env []string, check storeReader)) *e2eStore {
	t.Helper()
	s.at = func(t *testing.T, prefix string) *e2eStore {
		url, env, check := open(t, prefix)
		return &e2eStore{name: s.name, flags: []string{"--store=" + url}, env: env, check: check, at: s.at}
	}
	return s.at(t, prefix)
}

// onStores runs test once per store of names, side by side: each in a
// subtest of its own, with a store of its own at prefix.
func onStores(t *testing.T, names []string, prefix string, test func(t *testing.T, s *e2eStore)) {
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, startStore(t, name, prefix))
		})
	}
}

// fresh is a store of its own for one round of a test: on the same server
// at prefix where the store has one to share (starting Azurite costs
// seconds), else a new one.
func (s *e2eStore) fresh(t *testing.T, prefix string) *e2eStore {
	t.Helper()
	if s.at != nil {
		return s.at(t, prefix)
	}
	return startStore(t, s.name, prefix)
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
