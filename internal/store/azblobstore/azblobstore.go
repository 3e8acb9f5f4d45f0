// Package azblobstore is the Azure Blob Storage store backend
// (`azblob://ACCOUNT/CONTAINER/PREFIX`): leases, receipts and encrypted
// Terraform state as blobs of a container, with the official Azure SDK for
// Go (azblob, azidentity). Its layout and its protocol are the S3 store's,
// package objectstore's (docs/design.md §5.5 and §5.8), which this package
// composes with its object operations (objects.go), its layout check
// (layout.go) and its opener. The ETag preconditions are S3's: the scope's
// pointer is created with If-None-Match: * and replaced with If-Match: ETAG;
// Azure refuses either (409 BlobAlreadyExists, 412 ConditionNotMet) when
// someone wrote first.
// The server's clock is the Date of each answer. Blob leases are not used:
// the pointer's conditional writes fence every write, as on S3.
//
// Credentials: AZURE_STORAGE_KEY (the account's shared key, as Azurite and
// the azurerm backend's access_key take it), else DefaultAzureCredential
// (a service principal or workload identity federation from the AZURE_*
// variables, a managed identity, the Azure CLI's login). A key that does
// not decode, or that the service refuses, is STORE_PERMISSION at once,
// never retried.
//
// The boundary between repositories (PrefixAssignment) is a role assignment
// of Storage Blob Data Contributor on the container with an ABAC condition
// allowing reads, writes and deletes only of blobs whose blobs:path starts
// with PREFIX/, and listings only of such a blobs:prefix. A condition binds
// Entra ID principals only; the account key reaches every container.
// Azurite has no RBAC, so the tests check the printed condition, and
// exercise only the shared key. `sponson store verify` passes on Azurite; it
// checks no blob lease, as the store takes none.
package azblobstore

import (
	"context"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

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

// KeyEnv is the variable that holds the account's shared key.
const KeyEnv = "AZURE_STORAGE_KEY"

// keyHint is what to do when the state key is missing or wrong.
const keyHint = "Set " + statecrypt.EnvStateKey + " to 32 random bytes as hex or base64 (e.g. `openssl rand -hex 32`), the same key for every run against this container; " +
	"or, unsafe because anyone who can read the container reads the state, set " + statecrypt.EnvStatePlaintext + "=1."

// credentialHint names where the credential is looked up.
const credentialHint = "Sponson finds Azure credentials in this order: " + KeyEnv + " (the storage account's access key), " +
	"else DefaultAzureCredential: AZURE_CLIENT_ID with AZURE_TENANT_ID and AZURE_CLIENT_SECRET or AZURE_FEDERATED_TOKEN_FILE (workload identity federation, e.g. from GitHub OIDC), " +
	"a managed identity, or the Azure CLI's `az login`."

var hints = statecrypt.Hints{Key: keyHint, Restore: "Restore an earlier version of the blob if the container keeps versions, or quarantine the scope and re-adopt its state."}

// Store is the Azure Blob Storage store: package objectstore's store over
// a container. It is safe for concurrent use; any number of Stores in any
// number of processes may share one container and prefix.
type Store struct {
	*objectstore.Store
	b *bucket
	// cfg is what the options set for the objectstore.Store Open composes.
	cfg objectstore.Config
}

// bucket is the object operations on one container and the prefix's
// layout check: the objectstore.Bucket the Store is composed over.
type bucket struct {
	account   string
	container string
	endpoint  string // the account's blob service URL, without a trailing slash
	bucket    string // ACCOUNT/CONTAINER, as messages name it
	prefix    string // "" or ending in "/"
	display   string

	budget         time.Duration
	attemptTimeout time.Duration
	now            func() time.Time
	getenv         func(string) string

	// The client is made by the first operation (clientFor).
	clientMu sync.Mutex
	client   *container.Client

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
// key. Unsafe: anyone who can read the container reads every secret in it.
func WithPlaintextState() Option { return func(s *Store) { s.cfg.PlaintextState = true } }

// WithBudget sets how long transient failures and contention are retried.
func WithBudget(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.cfg.Budget = d
		}
	}
}

// WithGetenv reads AZURE_STORAGE_KEY through getenv instead of the process
// environment: for tests, which run in parallel.
func WithGetenv(getenv func(string) string) Option {
	return func(s *Store) {
		if getenv != nil {
			s.b.getenv = getenv
		}
	}
}

// FromEnv returns the options the environment sets: the state key, the
// plaintext opt-in (statecrypt.FromEnv) and the retry budget
// (store.BudgetFromEnv).
func FromEnv(getenv func(string) string) ([]Option, error) {
	return store.OptionsFromEnv(getenv, keyHint, store.SealedOptions[Option]{StateKey: WithStateKey, Budget: WithBudget, PlaintextState: WithPlaintextState})
}

// Location is what an azblob:// URL names.
type Location struct {
	Account   string
	Container string
	Prefix    string // "" or ending in "/"
	// Endpoint is the blob service of an emulator or a sovereign cloud
	// (?endpoint=URL); by default https://ACCOUNT.blob.core.windows.net.
	Endpoint string
}

// ParseURL parses azblob://ACCOUNT/CONTAINER[/PREFIX][?endpoint=URL].
func ParseURL(raw string) (Location, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "azblob" {
		return Location{}, errcode.New(errcode.Usage, "--store %q is not an azblob:// URL", redact(raw)).WithHint("Use --store azblob://ACCOUNT/CONTAINER/PREFIX.")
	}
	if u.User != nil {
		return Location{}, errcode.New(errcode.Usage, "an azblob:// store URL takes no credentials").WithHint(credentialHint)
	}
	container, prefix, _ := strings.Cut(strings.Trim(u.Path, "/"), "/")
	loc := Location{Account: u.Host, Container: container, Prefix: prefix}
	if loc.Account == "" || loc.Container == "" {
		return Location{}, errcode.New(errcode.Usage, "--store %q names no account or no container", redact(raw)).WithHint("Use --store azblob://ACCOUNT/CONTAINER/PREFIX.")
	}
	if loc.Prefix != "" {
		for _, seg := range strings.Split(loc.Prefix, "/") {
			if err := store.CheckName("store prefix segment", seg); err != nil {
				return Location{}, err
			}
		}
		loc.Prefix += "/"
	}
	q := u.Query()
	for k := range q {
		if k != "endpoint" {
			return Location{}, errcode.New(errcode.Usage, "--store azblob:// URL has an unknown parameter %q", k).WithHint("Known parameter: endpoint.")
		}
	}
	if ep := q.Get("endpoint"); ep != "" {
		eu, err := url.Parse(ep)
		if err != nil || (eu.Scheme != "http" && eu.Scheme != "https") || eu.Host == "" || eu.User != nil || eu.RawQuery != "" {
			return Location{}, errcode.New(errcode.Usage, "endpoint=%q is not an http(s) URL without credentials", redact(ep))
		}
		loc.Endpoint = strings.TrimSuffix(ep, "/")
	}
	return loc, nil
}

func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		u.User = nil
		u.RawQuery = ""
		return u.String()
	}
	return "azblob://…"
}

// Display is the URL as printed.
func (l Location) Display() string {
	out := "azblob://" + l.Account + "/" + l.Container + "/" + l.Prefix
	if l.Endpoint != "" {
		out += "?" + url.Values{"endpoint": {l.Endpoint}}.Encode()
	}
	return out
}

// Open returns the store at raw (an azblob:// URL). It makes no request and
// looks for no credential: the first operation does both.
func Open(_ context.Context, raw string, opts ...Option) (*Store, error) {
	loc, err := ParseURL(raw)
	if err != nil {
		return nil, err
	}
	endpoint := loc.Endpoint
	if endpoint == "" {
		endpoint = "https://" + loc.Account + ".blob.core.windows.net"
	}
	b := &bucket{
		account: loc.Account, container: loc.Container, endpoint: endpoint,
		bucket: loc.Account + "/" + loc.Container, prefix: loc.Prefix, display: loc.Display(),
		attemptTimeout: DefaultAttemptTimeout, getenv: os.Getenv,
	}
	s := &Store{
		b: b,
		cfg: objectstore.Config{
			Name: "Azure", Scheme: "azblob", Bucket: b.bucket, Prefix: loc.Prefix, Display: loc.Display(),
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
