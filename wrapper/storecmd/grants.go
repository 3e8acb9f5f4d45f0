package storecmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store/azblobstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/gcsstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/pgstore"
	"github.com/sponson/terraform-provider-sponson/internal/store/s3store"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// GrantsOptions are the options of `sponson grants`.
type GrantsOptions struct {
	*cmdutil.IO
	Store       string
	For         string
	StackPrefix string
}

// GrantsResult is the result of `sponson grants --json`.
type GrantsResult struct {
	// Kind is the store's kind: s3, gcs, azblob or postgres.
	Kind string `json:"kind"`
	// For is the principal (S3, GCS, Azure) or role (PostgreSQL) the grants
	// are for.
	For string `json:"for"`
	// Scope is what the grants confine it to: the S3 prefix, or the stack
	// name prefix in PostgreSQL; either ends at a "/" (it grants itself and
	// what lies below it, never a sibling that merely starts with it).
	Scope string `json:"scope"`
	// Document is the bucket policy (JSON), the gcloud or az command, or the
	// SQL statements.
	Document string `json:"document"`
}

// NewCmdGrants builds `sponson grants`: the store-side permissions that keep
// one repository's CI to its own part of a shared store. A stack name is a
// namespace, not an access control (docs/design.md §5.4, §5.5); this prints
// what makes the store enforce it. It connects to nothing.
func NewCmdGrants(f *cmdutil.Factory, out *cmdutil.Outcome, runF func(context.Context, *GrantsOptions) cmdutil.Outcome) *cobra.Command {
	opts := &GrantsOptions{IO: f.IO()}
	cmd := &cobra.Command{
		Use:   "grants --store URL --for PRINCIPAL [--stack-prefix PREFIX]",
		Short: "Print the bucket policy, IAM binding, role assignment or SQL that keeps one repository's CI to its own part of a store",
		Long: `Grants prints what an administrator applies once so that the store itself keeps
one repository's CI credentials to that repository's part of a shared store.
--stack keeps stacks apart but is not an access control: whoever holds a store's
credentials reaches every stack in it. Grants connects to nothing.

  S3 (--store s3://BUCKET/PREFIX): a bucket policy giving the principal --for
  (an IAM role or user ARN) the objects and listings under PREFIX/ only: the
  prefix ends at a "/", so s3://BUCKET/acme/infra never reaches
  s3://BUCKET/acme/infra-secrets. A bucket has one policy: for several
  repositories, give each its own prefix and put every repository's
  statements into it. The foreign check does not cross prefixes.

  GCS (--store gs://BUCKET/PREFIX): the gcloud command binding the principal
  --for (serviceAccount:... or principalSet://... for workload identity
  federation) to roles/storage.objectUser under an IAM condition on
  PREFIX/: it reads, writes and deletes only the objects under it. IAM
  checks a listing on the bucket, not a prefix, so the principal can list
  the names of every object of the bucket (never read one outside PREFIX/):
  give a repository its own bucket where names must stay hidden. Needs
  uniform bucket-level access.

  Azure (--store azblob://ACCOUNT/CONTAINER/PREFIX): the az command assigning
  the principal --for (an Entra ID object or client id) Storage Blob Data
  Contributor on the container with a condition on the blob path and the
  listing prefix PREFIX/ (fill in SUBSCRIPTION and RESOURCE_GROUP). The
  condition binds Entra ID principals only: the account key
  (AZURE_STORAGE_KEY) reaches every container.

  PostgreSQL (--store postgres://...): SQL to run as the schema's owner, giving
  the role --for row-level security on the stacks --stack-prefix names: the
  prefix itself and the stacks below it at a "/" (github.com/acme/infra grants
  github.com/acme/infra and github.com/acme/infra//app, never
  github.com/acme/infra-secrets). The role reads and writes those stacks and
  the environment-wide scopes, and reads the whole ownership index, which the
  foreign check needs. A run of the role on another stack fails with
  STORE_PERMISSION. Run the SQL again for every role granted by an earlier
  version: it replaces their policies, which matched a bare prefix.

The file and git stores have no grants of their own: the machine's file
permissions, or the repository's own access and branch protection rules on
the sponson-stacks/ branches, are their boundary.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(f, out, opts, func(cmd *cobra.Command, _ []string) error {
			return cmdutil.BindEnv(cmd.Flags(), grantsFlagEnv, opts.Getenv)
		}, runF, runGrants),
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Store, "store", "", "the shared store: s3://BUCKET/PREFIX, gs://BUCKET/PREFIX, azblob://ACCOUNT/CONTAINER/PREFIX or postgres://... (env SPONSON_STORE)")
	fs.StringVar(&opts.For, "for", "", "the principal (S3: an IAM ARN; GCS: an IAM member; Azure: an Entra ID object id) or role (PostgreSQL) of the repository's CI")
	fs.StringVar(&opts.StackPrefix, "stack-prefix", "", "PostgreSQL: the stacks of the repository, a stack name or its leading part ending at a \"/\", e.g. github.com/acme/app")
	return cmd
}

// grantsFlagEnv names the SPONSON_* variable of grants' one flag that has
// one: the store, as every command names it.
var grantsFlagEnv = map[string]string{"store": storeurl.EnvVar}

func runGrants(ctx context.Context, opts *GrantsOptions) cmdutil.Outcome {
	o := cmdutil.Outcome{Command: "grants"}
	res, err := grantsFor(opts)
	if err != nil {
		o.Err = err
		return o
	}
	o.Result = res
	if opts.JSON {
		return o
	}
	fmt.Fprintln(opts.Out, res.Document)
	return o
}

func grantsFor(opts *GrantsOptions) (*GrantsResult, error) {
	if strings.TrimSpace(opts.For) == "" {
		return nil, errcode.New(errcode.Usage, "grants needs --for: the principal or role of the repository's CI")
	}
	switch {
	case strings.HasPrefix(opts.Store, "s3://"):
		loc, err := s3store.ParseURL(opts.Store)
		if err != nil {
			return nil, err
		}
		if opts.StackPrefix != "" {
			return nil, errcode.New(errcode.Usage, "--stack-prefix is PostgreSQL's; on S3 the boundary is the URL's prefix").
				WithHint("Give the repository its own prefix: --store s3://BUCKET/REPOSITORY-PREFIX.")
		}
		doc, err := s3store.PrefixPolicy(loc.Bucket, map[string]string{opts.For: loc.Prefix})
		if err != nil {
			return nil, errcode.Wrap(errcode.Usage, err, "grants for %s", opts.Store)
		}
		return &GrantsResult{Kind: "s3", For: opts.For, Scope: strings.TrimSuffix(loc.Prefix, "/"), Document: doc}, nil
	case strings.HasPrefix(opts.Store, "gs://"):
		loc, err := gcsstore.ParseURL(opts.Store)
		if err != nil {
			return nil, err
		}
		if opts.StackPrefix != "" {
			return nil, errcode.New(errcode.Usage, "--stack-prefix is PostgreSQL's; on GCS the boundary is the URL's prefix").
				WithHint("Give the repository its own prefix: --store gs://BUCKET/REPOSITORY-PREFIX.")
		}
		doc, err := gcsstore.PrefixBinding(loc.Bucket, loc.Prefix, opts.For)
		if err != nil {
			return nil, errcode.Wrap(errcode.Usage, err, "grants for %s", opts.Store)
		}
		return &GrantsResult{Kind: "gcs", For: opts.For, Scope: strings.TrimSuffix(loc.Prefix, "/"), Document: doc}, nil
	case strings.HasPrefix(opts.Store, "azblob://"):
		loc, err := azblobstore.ParseURL(opts.Store)
		if err != nil {
			return nil, err
		}
		if opts.StackPrefix != "" {
			return nil, errcode.New(errcode.Usage, "--stack-prefix is PostgreSQL's; on Azure the boundary is the URL's prefix").
				WithHint("Give the repository its own prefix: --store azblob://ACCOUNT/CONTAINER/REPOSITORY-PREFIX.")
		}
		doc, err := azblobstore.PrefixAssignment(loc.Account, loc.Container, loc.Prefix, opts.For)
		if err != nil {
			return nil, errcode.Wrap(errcode.Usage, err, "grants for %s", opts.Store)
		}
		return &GrantsResult{Kind: "azblob", For: opts.For, Scope: strings.TrimSuffix(loc.Prefix, "/"), Document: doc}, nil
	case strings.HasPrefix(opts.Store, "postgres://"), strings.HasPrefix(opts.Store, "postgresql://"):
		doc, err := pgstore.PerStackSQL(pgstore.DefaultSchema, opts.For, opts.StackPrefix)
		if err != nil {
			return nil, errcode.Wrap(errcode.Usage, err, "grants for role %s", opts.For).
				WithHint("Give --for a lower-case role name and --stack-prefix the repository's stack prefix, e.g. github.com/acme/app.")
		}
		prefix, _ := pgstore.GrantPrefix(opts.StackPrefix) // PerStackSQL accepted it
		return &GrantsResult{Kind: "postgres", For: opts.For, Scope: prefix, Document: doc}, nil
	case opts.Store == "":
		return nil, errcode.New(errcode.Usage, "grants needs --store: the shared store's URL (s3://, gs://, azblob:// or postgres://)")
	default:
		return nil, errcode.New(errcode.Usage, "the store %q has no grants of its own", opts.Store).
			WithHint("The file store's boundary is the machine's file permissions; the git store's, the repository's access and branch protection on its sponson-stacks/ branches.")
	}
}
