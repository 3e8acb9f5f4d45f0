package cmdutil

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
)

// Prepare gives each store flag left unset its SPONSON_* variable; a
// command's prepare calls it before Open.
func (s *StoreFlags) Prepare(cmd *cobra.Command, getenv func(string) string) error {
	return BindEnv(cmd.Flags(), RunFlagEnv, getenv)
}

// Open opens the store of --store (or the default beside the configuration
// of --chdir) for the environment --env names, as the trusted rules spell
// it; it returns the store, its URL and the environment.
func (s *StoreFlags) Open(ctx context.Context, getenv func(string) string) (store.Store, string, string, error) {
	env := s.Env
	if env == "" {
		env = strings.TrimSpace(getenv("SPONSON_CTX_ENV"))
	}
	if env == "" {
		env = runctx.DefaultEnvironment
	}
	if err := runctx.ValidName("environment", env); err != nil {
		return nil, "", "", err
	}
	dir := s.Chdir
	if dir == "" {
		dir = "."
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, "", "", errcode.Wrap(errcode.Usage, err, "--chdir %q", s.Chdir)
	}
	// The same names as plan and apply: --env Production reads production.
	decl, err := DeclaredEnvironment(ctx, getenv, dir, runctx.Context{Environment: env})
	if err != nil {
		return nil, "", "", err
	}
	env = decl.Name
	st, url, err := storeurl.OpenFor(s.Store, dir, env)
	return st, url, env, err
}
