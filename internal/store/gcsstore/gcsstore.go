// Package gcsstore is the Google Cloud Storage store backend
// (`gs://BUCKET/PREFIX`): leases, receipts and encrypted Terraform state as
// objects of a bucket, over Google's official JSON API client
// (google.golang.org/api/storage/v1, the layer under
// cloud.google.com/go/storage, whose gRPC and telemetry dependencies would
// make every sponson start pay; docs/design.md §5.7) with credentials as
// Google's libraries find them (application default credentials,
// cloud.google.com/go/auth). Its layout and its protocol are the S3
// store's, package objectstore's (docs/design.md §5.5), which this package
// composes with its object operations (objects.go), its layout check
// (layout.go) and its opener; only the compare-and-swap differs:
//
//   - Every write of an object gets a new generation. The scope's pointer
//     is created with ifGenerationMatch=0 (only if absent) and replaced with
//     ifGenerationMatch=G, G the generation it was read with; GCS refuses
//     either with 412 when someone wrote first. Generations play the part
//     of S3's ETags everywhere (the index, the ownership log).
//   - The server's clock is the Date of each answer, as on S3.
//   - Deletes are unconditional: like the S3 store, this one deletes only
//     bodies under fresh names and garbage, never a pointer.
//
// Credentials: GOOGLE_APPLICATION_CREDENTIALS (a service account key or an
// external account configuration, such as workload identity federation
// from GitHub or GitLab OIDC), else the file of `gcloud auth
// application-default login`, else the metadata server on Google Cloud;
// STORAGE_EMULATOR_HOST points the store at an emulator without
// credentials. A missing or refused credential is STORE_PERMISSION at once,
// never retried (docs/design.md §5.7); only what may pass (no answer, a 5xx,
// 429, 408) is retried within the budget, then STORE_UNAVAILABLE in the
// transport's words. Open reads no file and asks no server.
//
// On fake-gcs-server `sponson store verify` holds for all but the conditional
// delete (TestVerifyOnTheEmulator); through a stand-in that drops
// ifGenerationMatch the writes fail (TestVerifyFailsWhereConditionsAreIgnored).
// The end-to-end crash and succession tests run on this store and on the
// Azure store's, each in a parallel subtest with its own emulator.
//
// The boundary between repositories (PrefixBinding) is an IAM binding of
// roles/storage.objectUser, under uniform bucket-level access, with the
// condition resource.name.startsWith("projects/_/buckets/BUCKET/objects/PREFIX/"),
// which confines reads, writes and deletes to the prefix. IAM checks a
// listing on the bucket, whose name carries no prefix, so the condition also
// lets bucket-level checks through (resource.type ==
// "storage.googleapis.com/Bucket"): the principal can list the names of
// every object of the bucket, never read or change one outside its prefix.
package gcsstore

import (
	"context"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	raw "google.golang.org/api/storage/v1"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/objectstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/statecrypt"
)

var _ store.Store = (*Store)(nil)

// Defaults of the retry loop.
const (
	// DefaultBudget is how long contention and transient failures are retried.
	DefaultBudget = 60 * time.Second
	// DefaultAttemptTimeout bounds one request, so a server that stopped
	// answering costs one attempt, not the whole budget.
	DefaultAttemptTimeout = 15 * time.Second
	// TakeoverMargin is added to a lease's expiry before another holder may
	// take it over: the server's Date is rounded down to the second.
	TakeoverMargin = objectstore.TakeoverMargin
)

// EmulatorEnv is the variable the Google client reads to talk to an
// emulator (host:port or a URL) without credentials.
const EmulatorEnv = "STORAGE_EMULATOR_HOST"

// keyHint is what to do when the state key is missing or wrong.
const keyHint = "Set " + statecrypt.EnvStateKey + " to 32 random bytes as hex or base64 (e.g. `openssl rand -hex 32`), the same key for every run against this bucket; " +
	"or, unsafe because anyone who can read the bucket reads the state, set " + statecrypt.EnvStatePlaintext + "=1."

// credentialHint names where the credential is looked up.
const credentialHint = "Sponson finds Google credentials as Google's libraries do: the file named by GOOGLE_APPLICATION_CREDENTIALS " +
	"(a service account key, or a workload identity federation configuration such as google-github-actions/auth writes), " +
	"else the file of `gcloud auth application-default login` (~/.config/gcloud/application_default_credentials.json), " +
	"else the metadata server on Google Cloud. For an emulator set " + EmulatorEnv + "=HOST:PORT."

var hints = statecrypt.Hints{Key: keyHint, Restore: "Restore an earlier generation of the object if the bucket keeps noncurrent versions, or quarantine the scope and re-adopt its state."}

// Store is the GCS store: package objectstore's store over a GCS bucket. It
// is safe for concurrent use; any number of Stores in any number of
// processes may share one bucket and prefix.
type Store struct {
	*objectstore.Store
	b *bucket
	// cfg is what the options set for the objectstore.Store Open composes.
	cfg objectstore.Config
}

// bucket is the object operations on one GCS bucket and the prefix's
// layout check: the objectstore.Bucket the Store is composed over.
type bucket struct {
	bucket  string
	prefix  string // "" or ending in "/"
	display string

	budget         time.Duration
	attemptTimeout time.Duration
	now            func() time.Time
	getenv         func(string) string

	// The client is made by the first operation (clientFor): finding the
	// credential may read files or ask the metadata server, which Open
	// does not do.
	clientMu sync.Mutex
	client   *raw.Service

	// The layout check of Ready: layoutChecked once no newer marker was
	// found, layoutWritten once the marker is there.
	layoutMu      sync.Mutex
	layoutChecked bool
	layoutWritten bool
	conforming    bool // the server refused a create of the existing marker (checkConditions)
	layout        int  // the marker's, 0 while none was found
}

// Option configures Open.
type Option func(*Store)

// WithStateKey makes the store seal state with key (statecrypt.KeySize bytes).
func WithStateKey(key []byte) Option { return func(s *Store) { s.cfg.StateKey = key } }

// WithPlaintextState lets the store write state unencrypted when it has no
// key. Unsafe: anyone who can read the bucket reads every secret in it.
func WithPlaintextState() Option { return func(s *Store) { s.cfg.PlaintextState = true } }

// WithBudget sets how long transient failures and contention are retried.
func WithBudget(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.cfg.Budget = d
		}
	}
}

// WithAttemptTimeout bounds one request.
func WithAttemptTimeout(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.b.attemptTimeout = d
		}
	}
}

// WithGetenv reads STORAGE_EMULATOR_HOST through getenv instead of the
// process environment: for tests, which run in parallel. The credential is
// found in the process environment, as Google's libraries find it.
func WithGetenv(getenv func(string) string) Option {
	return func(s *Store) {
		if getenv != nil {
			s.b.getenv = getenv
		}
	}
}

// WithClock is the time used when a response carries no Date (the server's
// clock decides every expiry; this is only the fallback).
func WithClock(now func() time.Time) Option {
	return func(s *Store) {
		if now != nil {
			s.cfg.Now = now
		}
	}
}

// FromEnv returns the options the environment sets: the state key
// (SPONSON_STATE_KEY) and the plaintext opt-in (SPONSON_STATE_PLAINTEXT),
// read by statecrypt.FromEnv, and the retry budget (SPONSON_STORE_BUDGET,
// store.BudgetFromEnv). A malformed value is a USAGE error, never a silent
// default; a key is never repeated in an error.
func FromEnv(getenv func(string) string) ([]Option, error) {
	return store.OptionsFromEnv(getenv, keyHint, store.SealedOptions[Option]{StateKey: WithStateKey, Budget: WithBudget, PlaintextState: WithPlaintextState})
}

// Location is what a gs:// URL names.
type Location struct {
	Bucket string
	Prefix string // "" or ending in "/"
}

// ParseURL parses gs://BUCKET[/PREFIX]. The URL takes no credentials and no
// parameters: credentials come from application default credentials, an
// emulator from STORAGE_EMULATOR_HOST.
func ParseURL(raw string) (Location, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "gs" {
		return Location{}, errcode.New(errcode.Usage, "--store %q is not a gs:// URL", redact(raw)).WithHint("Use --store gs://BUCKET/PREFIX.")
	}
	if u.User != nil {
		return Location{}, errcode.New(errcode.Usage, "a gs:// store URL takes no credentials").WithHint(credentialHint)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return Location{}, errcode.New(errcode.Usage, "--store %q: a gs:// URL takes no parameters", redact(raw)).
			WithHint("Use --store gs://BUCKET/PREFIX; an emulator is named by " + EmulatorEnv + ".")
	}
	loc := Location{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/")}
	if loc.Bucket == "" {
		return Location{}, errcode.New(errcode.Usage, "--store %q names no bucket", redact(raw)).WithHint("Use --store gs://BUCKET/PREFIX.")
	}
	if loc.Prefix != "" {
		for _, seg := range strings.Split(loc.Prefix, "/") {
			if err := store.CheckName("store prefix segment", seg); err != nil {
				return Location{}, err
			}
		}
		loc.Prefix += "/"
	}
	return loc, nil
}

func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		u.User = nil
		return u.String()
	}
	return "gs://…"
}

// Display is the URL as printed.
func (l Location) Display() string { return "gs://" + l.Bucket + "/" + l.Prefix }

// Open returns the store at raw (a gs:// URL). It makes no request and
// looks for no credential: the first operation does both, and reports a
// missing bucket, a missing credential or refused access.
func Open(_ context.Context, raw string, opts ...Option) (*Store, error) {
	loc, err := ParseURL(raw)
	if err != nil {
		return nil, err
	}
	s := &Store{
		b: &bucket{bucket: loc.Bucket, prefix: loc.Prefix, display: loc.Display(), attemptTimeout: DefaultAttemptTimeout, getenv: os.Getenv},
		cfg: objectstore.Config{
			Name: "GCS", Scheme: "gs", Bucket: loc.Bucket, Prefix: loc.Prefix, Display: loc.Display(),
			Hints: hints, Budget: DefaultBudget, Now: time.Now,
		},
	}
	for _, o := range opts {
		o(s)
	}
	s.b.budget, s.b.now = s.cfg.Budget, s.cfg.Now
	if s.Store, err = objectstore.New(s.cfg, s.b); err != nil {
		return nil, err
	}
	return s, nil
}
