// Package storeurl opens the store a --store URL names. It is apart from
// package store so that store stays free of its backends.
package storeurl

import (
	"net/url"
	"path/filepath"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/secrets"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
	"github.com/sponson/terraform-provider-sponson/internal/store/statecrypt"
)

// EnvVar names the store when --store (or the provider's store attribute)
// is not given.
const EnvVar = "SPONSON_STORE"

// DefaultDir is the embedded store's directory inside the configuration
// directory when no --store is given.
const DefaultDir = ".sponson"

// Open opens the store named by raw. An empty raw means the embedded file
// store under configDir. A relative file path is relative to the working
// directory of the sponson process, as everywhere on a command line.
func Open(raw, configDir string) (store.Store, string, error) {
	return open(raw, configDir, false, secrets.Getenv)
}

// OpenFor opens the store like Open for runs in environment env: a store
// that encrypts state uses env's own key (SPONSON_STATE_KEY_<ENV>) where
// one is set, else SPONSON_STATE_KEY (package statecrypt).
func OpenFor(raw, configDir, env string) (store.Store, string, error) {
	return open(raw, configDir, false, statecrypt.ForEnvironment(env, secrets.Getenv))
}

// OpenForMigration opens the store like Open, whatever its layout, for
// `sponson migrate` alone: every other use of a store written before
// stacks is refused with STORE_LAYOUT_OLD.
func OpenForMigration(raw, configDir string) (store.Migrator, string, error) {
	st, url, err := open(raw, configDir, true, secrets.Getenv)
	if err != nil {
		return nil, url, err
	}
	m, ok := st.(store.Migrator)
	if !ok {
		st.Close()
		return nil, url, errcode.New(errcode.Usage, "the store %s has no layout to migrate", url)
	}
	return m, url, nil
}

func open(raw, configDir string, old bool, getenv func(string) string) (store.Store, string, error) {
	var fileOpts []filestore.Option
	if old {
		fileOpts = append(fileOpts, filestore.WithOldLayout())
	}
	if raw == "" {
		root := filepath.Join(configDir, DefaultDir)
		st, err := filestore.Open(root, fileOpts...)
		return st, "file://" + root, err
	}
	switch {
	case strings.HasPrefix(raw, "file://"):
		p := strings.TrimPrefix(raw, "file://")
		if u, err := url.Parse(raw); err == nil && u.Host == "" && u.Path != "" {
			p = u.Path
		}
		if p == "" {
			return nil, "", errcode.New(errcode.Usage, "--store %q names no directory", raw).WithHint("Use --store file:///absolute/dir or --store file://relative/dir.")
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, "", errcode.Wrap(errcode.Usage, err, "--store %q", raw)
		}
		st, err := filestore.Open(abs, fileOpts...)
		return st, "file://" + abs, err
	case raw == "git" || strings.HasPrefix(raw, "git+"):
		return openGit(raw, configDir, old, getenv)
	case strings.HasPrefix(raw, "postgres://") || strings.HasPrefix(raw, "postgresql://"):
		return openPostgres(raw, old)
	case strings.HasPrefix(raw, "s3://"):
		return openS3(raw, getenv)
	case strings.HasPrefix(raw, "gs://"):
		return openGCS(raw, getenv)
	case strings.HasPrefix(raw, "azblob://"):
		return openAzblob(raw, getenv)
	default:
		return nil, "", errcode.New(errcode.Usage, "--store %q is not a store URL", Redact(raw)).
			WithHint("Use file://DIR, git (the remote origin), git+URL, postgres://..., s3://BUCKET/PREFIX, gs://BUCKET/PREFIX or azblob://ACCOUNT/CONTAINER/PREFIX; leave --store unset for the embedded store in .sponson/.")
	}
}

// Redact removes credentials from a store URL before it is printed.
// A password is dropped; a user name alone is kept, except on http(s)
// remotes, where a token is commonly given as the user name
// (https://TOKEN@host/...).
func Redact(raw string) string {
	prefix := ""
	if rest, ok := strings.CutPrefix(raw, "git+"); ok {
		prefix, raw = "git+", rest
	}
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return prefix + raw
	}
	if _, hasPassword := u.User.Password(); !hasPassword && (u.Scheme == "http" || u.Scheme == "https") {
		u.User = url.User("***")
	} else {
		u.User = url.User(u.User.Username())
	}
	return prefix + strings.Replace(u.String(), "%2A%2A%2A@", "***@", 1)
}

// HandoverURL is the store URL handed to the provider the engine starts:
// the --store value as given (credentials included: it travels only in the
// child's environment, never in a message), or the embedded store's file
// URL when none was given.
func HandoverURL(raw, display string) string {
	if raw == "" {
		return display
	}
	return raw
}
