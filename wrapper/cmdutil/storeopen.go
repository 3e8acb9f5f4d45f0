package cmdutil

import (
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
)

func StoreOpen(s *StoreFlags, cmd *cobra.Command, f *Factory) (store.Store, string, string, error) {
	if err := BindEnv(cmd.Flags(), RunFlagEnv, f.Getenv); err != nil {
		return nil, "", "", err
	}
	env := s.Env
	if env == "" {
		env = strings.TrimSpace(f.Getenv("SPONSON_CTX_ENV"))
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
	decl, err := DeclaredEnvironment(cmd.Context(), f, dir, runctx.Context{Environment: env})
	if err != nil {
		return nil, "", "", err
	}
	env = decl.Name
	st, url, err := storeurl.OpenFor(s.Store, dir, env)
	return st, url, env, err
}
