package storecmd

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store/verify"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// DefaultWriters is how many writers race for one object in `store verify`.
const DefaultWriters = 8

// VerifyOptions are the options of `sponson store verify`.
type VerifyOptions struct {
	*cmdutil.IO
	Store   string
	Writers int
}

// VerifyResult is the result of `sponson store verify --json`.
type VerifyResult struct {
	Store string `json:"store"`
	// Prefix is the throwaway prefix the check wrote under, removed since.
	Prefix     string           `json:"prefix"`
	Writers    int              `json:"writers"`
	Properties []VerifyProperty `json:"properties"`
	// Leftover lists what the check could not remove (empty when the
	// prefix listed empty afterwards).
	Leftover []string `json:"leftover"`
	OK       bool     `json:"ok"`
}

// VerifyProperty is one property of the check and what was seen.
type VerifyProperty struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// NewCmdStore builds `sponson store`, the group of a store's own checks.
func NewCmdStore(f *cmdutil.Factory, out *cmdutil.Outcome) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store <command>",
		Short: "Check a shared store before it is trusted",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(NewCmdVerify(f, out, nil))
	return cmd
}

// NewCmdVerify builds `sponson store verify`: it proves on a throwaway
// prefix that an object store's server honours the conditional writes the
// store's fencing stands on (docs/design.md §5.5).
func NewCmdVerify(f *cmdutil.Factory, out *cmdutil.Outcome, runF func(context.Context, *VerifyOptions) cmdutil.Outcome) *cobra.Command {
	opts := &VerifyOptions{IO: f.IO()}
	cmd := &cobra.Command{
		Use:   "verify --store URL",
		Short: "Prove that an object store honours the conditional writes fencing needs",
		Long: `Verify proves, before a team trusts a bucket or a new S3-compatible server, that
the server honours what the store's fencing stands on. On a throwaway prefix
under the store's (PREFIX/.sponson-verify-RANDOM/) it checks, one line each:

  create-if-absent        a create of an object that exists is refused
  stale-version-refused   a write on a stale ETag or generation is refused
  one-winner              of --writers writers replacing one version at once,
                          exactly one wins and the others are refused
  conditional-delete      a delete on a stale ETag or generation is refused

Then it removes what it wrote and lists the prefix to prove it empty. Exit 1
(STORE_NOT_CONFORMING) when any property fails or anything is left behind.
It needs the store's credentials with write access to the prefix, and no
state key. Each request is one attempt: nothing is retried.

Stores: s3://BUCKET/PREFIX[?endpoint=URL], gs://BUCKET/PREFIX and
azblob://ACCOUNT/CONTAINER/PREFIX. The Azure store uses no blob leases (its
pointer's ETag conditions fence every write), so no lease expiry is checked.
The file, git and PostgreSQL stores are not object stores and are refused:
their fencing is the file lock, the push's compare-and-swap on the ref, and
the database's row lock in one transaction, which the conformance suite
proves.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(f, out, opts, func(cmd *cobra.Command, _ []string) error {
			return cmdutil.BindEnv(cmd.Flags(), grantsFlagEnv, opts.Getenv)
		}, runF, runVerify),
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Store, "store", "", "the object store: s3://BUCKET/PREFIX, gs://BUCKET/PREFIX or azblob://ACCOUNT/CONTAINER/PREFIX (env SPONSON_STORE)")
	fs.IntVar(&opts.Writers, "writers", DefaultWriters, "how many writers race to replace one object")
	return cmd
}

// verifier is an object store that can prove its server's conditions.
type verifier interface {
	Verify(ctx context.Context, writers int) (verify.Report, error)
	Close() error
}

func runVerify(ctx context.Context, opts *VerifyOptions) cmdutil.Outcome {
	o := cmdutil.Outcome{Command: "store verify"}
	if err := verifiable(opts.Store); err != nil {
		o.Err = err
		return o
	}
	if opts.Writers < 2 {
		o.Err = errcode.New(errcode.Usage, "--writers %d: a race needs at least 2 writers", opts.Writers)
		return o
	}
	st, url, err := storeurl.Open(opts.Store, "")
	if err != nil {
		o.Err = err
		return o
	}
	defer st.Close()
	v, ok := st.(verifier)
	if !ok {
		o.Err = errcode.New(errcode.Internal, "the store %s has no verification", url)
		return o
	}
	r, err := v.Verify(ctx, opts.Writers)
	res := VerifyResult{Store: url, Prefix: r.Prefix, Writers: opts.Writers, Properties: []VerifyProperty{}, Leftover: r.Leftover, OK: err == nil && r.OK()}
	if res.Leftover == nil {
		res.Leftover = []string{}
	}
	var failed []string
	for _, p := range r.Properties {
		res.Properties = append(res.Properties, VerifyProperty{Name: p.Name, OK: p.OK, Detail: p.Detail})
		if !p.OK {
			failed = append(failed, p.Name)
		}
	}
	o.Result = res
	if !opts.JSON {
		p := cmdutil.Printer{W: opts.Out}
		p.Line("sponson store verify · store %s · prefix %s · %d writers", url, r.Prefix, opts.Writers)
		for _, q := range res.Properties {
			mark := "pass"
			if !q.OK {
				mark = "FAIL"
			}
			p.Line("  %s  %-22s %s", mark, q.Name, q.Detail)
		}
		if err == nil {
			if len(res.Leftover) == 0 {
				p.Line("  pass  %-22s the prefix listed empty after the check", "nothing-left-behind")
			} else {
				p.Line("  FAIL  %-22s %d object(s) could not be removed: %s", "nothing-left-behind", len(res.Leftover), strings.Join(res.Leftover, ", "))
			}
		}
	}
	switch {
	case err != nil:
		o.Err = err
	case len(failed) > 0:
		o.Err = errcode.New(errcode.StoreNotConforming, "the store %s does not honour what fencing needs: %s failed", url, strings.Join(failed, ", ")).
			With("failed", failed).With("store", url)
	case len(res.Leftover) > 0:
		o.Err = errcode.New(errcode.StoreNotConforming, "the store %s kept %d object(s) of the check after deleting them: %s", url, len(res.Leftover), strings.Join(res.Leftover, ", ")).
			WithHint("Remove them by hand; a server that acknowledges a delete and keeps the object would also keep a scope's garbage.").
			With("leftover", res.Leftover).With("store", url)
	}
	return o
}

// verifiable refuses what is not an object store, saying what fences it.
func verifiable(raw string) error {
	switch {
	case strings.HasPrefix(raw, "s3://"), strings.HasPrefix(raw, "gs://"), strings.HasPrefix(raw, "azblob://"):
		return nil
	case raw == "":
		return errcode.New(errcode.Usage, "store verify needs --store: the object store's URL (s3://, gs:// or azblob://)")
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		return errcode.New(errcode.Usage, "the PostgreSQL store is not an object store: its fencing is the database's (a fenced write is one transaction that locks the lease row), so there is nothing to verify").
			WithHint("store verify checks s3://, gs:// and azblob:// stores; a PostgreSQL server needs no such check.")
	case raw == "git", strings.HasPrefix(raw, "git+"):
		return errcode.New(errcode.Usage, "the git store is not an object store: its fencing is the ref's (a push with --force-with-lease on the tip it decided on), so there is nothing to verify").
			WithHint("store verify checks s3://, gs:// and azblob:// stores; the git remote's own compare-and-swap of refs fences the git store.")
	case strings.HasPrefix(raw, "file://"):
		return errcode.New(errcode.Usage, "the file store is not an object store: its fencing is the file lock (flock) of each scope on one machine, so there is nothing to verify").
			WithHint("store verify checks s3://, gs:// and azblob:// stores.")
	}
	return errcode.New(errcode.Usage, "--store %q is not an object store URL", storeurl.Redact(raw)).
		WithHint("Use s3://BUCKET/PREFIX, gs://BUCKET/PREFIX or azblob://ACCOUNT/CONTAINER/PREFIX.")
}
