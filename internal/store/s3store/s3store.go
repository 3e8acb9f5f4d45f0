// Package s3store is the S3 store backend (`s3://BUCKET/PREFIX`): leases,
// receipts and encrypted Terraform state as objects of a bucket, on AWS S3 or
// any server with S3's conditional writes (If-None-Match: * on create,
// If-Match: ETAG on overwrite). The layout and the protocol above the object
// operations are package objectstore's (docs/design.md §5.5 "S3"; §2.8
// "Fenced write"); this package is the object operations on S3 (objects.go),
// the layout check (layout.go) and the opener:
//
//   - Conditions. A 412 is objectstore.ErrPrecondition; a 409
//     ConditionalRequestConflict (a concurrent conditional write in flight)
//     is retried within the budget.
//   - Servers that ignore conditions. Before the first write of each
//     process (checkConditions, layout.go) a create-if-absent of the layout
//     marker, which exists then, must be refused; one accepted is
//     STORE_NOT_CONFORMING and nothing else is written (docs/design.md §5.5).
//   - Credentials. The credential chain's failures are marked: one the
//     chain cannot find is STORE_PERMISSION at once, its hint naming the
//     chain's sources; only a 5xx or 429 from the credential's own source is
//     retried; one S3 refuses is STORE_PERMISSION after one request. The SDK
//     logs nothing (its "falling back to IMDSv1" included).
package s3store

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

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

// credentialHint names where the AWS chain looks for a credential.
const credentialHint = "Sponson finds AWS credentials in the standard chain: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN), " +
	"AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN (OIDC from CI, e.g. aws-actions/configure-aws-credentials), AWS_PROFILE in ~/.aws/config and ~/.aws/credentials (SSO included), " +
	"then the container or instance role (ECS, EC2 instance metadata)."

// keyHint is what to do when the state key is missing or wrong.
const keyHint = "Set " + statecrypt.EnvStateKey + " to 32 random bytes as hex or base64 (e.g. `openssl rand -hex 32`), the same key for every run against this bucket; " +
	"or, unsafe because anyone who can read the bucket reads the state, set " + statecrypt.EnvStatePlaintext + "=1."

var hints = statecrypt.Hints{Key: keyHint, Restore: "Restore an earlier version of the object if the bucket is versioned, or quarantine the scope and re-adopt its state."}

// Store is the S3 store: package objectstore's store over an S3 bucket. It
// is safe for concurrent use; any number of Stores in any number of
// processes may share one bucket and prefix.
type Store struct {
	*objectstore.Store
	b *bucket
	// cfg is what the options set for the objectstore.Store Open composes.
	cfg objectstore.Config
}

// bucket is the object operations on one S3 bucket and the prefix's layout
// check: the objectstore.Bucket the Store is composed over.
type bucket struct {
	client  *s3.Client
	bucket  string
	prefix  string // "" or ending in "/"
	display string

	budget         time.Duration
	attemptTimeout time.Duration
	now            func() time.Time
	cfg            *aws.Config

	// The layout check of ready: layoutChecked once no newer marker and no
	// old pointers were found, layoutWritten once the marker is there.
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

// WithAWSConfig uses cfg instead of the standard AWS chain (environment,
// shared config and credentials files, SSO, instance roles): for tests.
func WithAWSConfig(cfg aws.Config) Option { return func(s *Store) { s.b.cfg = &cfg } }

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

// Location is what an s3:// URL names.
type Location struct {
	Bucket string
	Prefix string // "" or ending in "/"
	// Endpoint is the server of an S3-compatible store (?endpoint=URL);
	// it implies path-style addressing.
	Endpoint  string
	Region    string // ?region=
	PathStyle bool   // ?endpoint= or ?path_style=true
}

// ParseURL parses s3://BUCKET[/PREFIX][?endpoint=URL&region=R&path_style=true].
// Credentials in the URL are refused without being repeated: they come from
// the standard AWS chain.
func ParseURL(raw string) (Location, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" {
		return Location{}, errcode.New(errcode.Usage, "--store %q is not an s3:// URL", redactQuery(raw)).WithHint("Use --store s3://BUCKET/PREFIX, with ?endpoint=URL for an S3-compatible server.")
	}
	if u.User != nil {
		return Location{}, errcode.New(errcode.Usage, "an s3:// store URL takes no credentials").
			WithHint("Give credentials the standard AWS way: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO or an instance role.")
	}
	loc := Location{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/")}
	if loc.Bucket == "" {
		return Location{}, errcode.New(errcode.Usage, "--store %q names no bucket", redactQuery(raw)).WithHint("Use --store s3://BUCKET/PREFIX.")
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
		switch k {
		case "endpoint", "region", "path_style":
		default:
			return Location{}, errcode.New(errcode.Usage, "--store s3:// URL has an unknown parameter %q", k).WithHint("Known parameters: endpoint, region, path_style.")
		}
	}
	if ep := q.Get("endpoint"); ep != "" {
		eu, err := url.Parse(ep)
		if err != nil || (eu.Scheme != "http" && eu.Scheme != "https") || eu.Host == "" || eu.User != nil {
			return Location{}, errcode.New(errcode.Usage, "endpoint=%q is not an http(s) URL without credentials", redactQuery(ep))
		}
		loc.Endpoint, loc.PathStyle = ep, true
	}
	loc.Region = q.Get("region")
	if v := q.Get("path_style"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Location{}, errcode.New(errcode.Usage, "path_style=%q: use true or false", v)
		}
		loc.PathStyle = b || loc.Endpoint != ""
	}
	return loc, nil
}

func redactQuery(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		u.User = nil
		return u.String()
	}
	return "s3://…"
}

// Display is the URL as printed: bucket, prefix and endpoint, never more.
func (l Location) Display() string {
	out := "s3://" + l.Bucket + "/" + l.Prefix
	q := url.Values{}
	if l.Endpoint != "" {
		q.Set("endpoint", l.Endpoint)
	}
	if l.Region != "" {
		q.Set("region", l.Region)
	}
	if len(q) > 0 {
		out += "?" + q.Encode()
	}
	return out
}

// Open returns the store at raw (an s3:// URL). Credentials and the region
// come from the standard AWS chain (AWS_ENDPOINT_URL_S3 included, as the
// SDK honours it), unless WithAWSConfig is given. Open makes no request: a
// missing bucket or refused access is reported by the first operation.
func Open(ctx context.Context, raw string, opts ...Option) (*Store, error) {
	loc, err := ParseURL(raw)
	if err != nil {
		return nil, err
	}
	s := &Store{
		b: &bucket{bucket: loc.Bucket, prefix: loc.Prefix, display: loc.Display(), attemptTimeout: DefaultAttemptTimeout},
		cfg: objectstore.Config{
			Name: "S3", Scheme: "s3", Bucket: loc.Bucket, Prefix: loc.Prefix, Display: loc.Display(),
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
	var cfg aws.Config
	if s.b.cfg != nil {
		cfg = s.b.cfg.Copy()
	} else {
		// No SDK log line reaches sponson's output (the IMDS client's
		// "falling back to IMDSv1" among them): what failed is in the
		// error the operation returns.
		lo := []func(*config.LoadOptions) error{config.WithLogger(logging.Nop{}), config.WithClientLogMode(0)}
		if loc.Region != "" {
			lo = append(lo, config.WithRegion(loc.Region))
		}
		cfg, err = config.LoadDefaultConfig(ctx, lo...)
		if err != nil {
			return nil, errcode.Wrap(errcode.Usage, err, "the AWS configuration does not load").
				WithHint("Check AWS_PROFILE, AWS_REGION and the shared config and credentials files.")
		}
	}
	if loc.Region != "" {
		cfg.Region = loc.Region
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1" // S3-compatible servers ignore it; AWS redirects
	}
	// Retries are ours (budget, unknown outcomes of conditional writes).
	cfg.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
	cfg.Logger, cfg.ClientLogMode = logging.Nop{}, 0
	// A credential the chain cannot find or its source refuses is told
	// apart from the network (objects.go, transient and permanent).
	if cfg.Credentials != nil {
		cfg.Credentials = credentialSource{cfg.Credentials}
	}
	s.b.client = s3.NewFromConfig(cfg, func(o *s3.Options) {
		if loc.Endpoint != "" {
			o.BaseEndpoint = aws.String(loc.Endpoint)
		}
		if loc.PathStyle {
			o.UsePathStyle = true
		}
		// Whole-body checksums only where S3 requires them: S3-compatible
		// servers differ in their support of trailing checksums, and the
		// MD5 ETag already covers every body.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	return s, nil
}
