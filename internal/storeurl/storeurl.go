// Package storeurl opens the store a --store URL names. It is apart from
// package store so that store stays free of its backends.
package storeurl

import (
	"net/url"
	"path/filepath"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/filestore"
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
	if raw == "" {
		root := filepath.Join(configDir, DefaultDir)
		st, err := filestore.Open(root)
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
		st, err := filestore.Open(abs)
		return st, "file://" + abs, err
	case raw == "git" || strings.HasPrefix(raw, "git+"):
		return openGit(raw, configDir)
	case strings.HasPrefix(raw, "postgres://") || strings.HasPrefix(raw, "postgresql://"):
		return openPostgres(raw)
	default:
		return nil, "", errcode.New(errcode.Usage, "--store %q is not a store URL", Redact(raw)).
			WithHint("Use file://DIR, git (the remote origin), git+URL, or postgres://...; leave --store unset for the embedded store in .sponson/.")
	}
}

// Redact removes credentials from a store URL before it is printed.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = url.User(u.User.Username())
	return u.String()
}
