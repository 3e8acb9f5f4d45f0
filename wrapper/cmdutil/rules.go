package cmdutil

import (
	"context"

	"github.com/sponson/terraform-provider-sponson/internal/environments"
	"github.com/sponson/terraform-provider-sponson/internal/ownership"
	"github.com/sponson/terraform-provider-sponson/internal/rules"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
)

// TrustedRules reads the rules that judge a run in dir whose context is c:
// the default branch's, never the change's own (rules.Load, docs/design.md
// §2.18 "Trusted rules").
func TrustedRules(ctx context.Context, getenv func(string) string, dir string, c runctx.Context) (rules.Rules, error) {
	return rules.Load(ctx, dir, c, rules.Sources{Getenv: getenv, Git: rules.GitIn(dir)})
}

// DeclaredEnvironment matches c's environment against the trusted rules of
// the repository of dir, for the commands that are not a run; c needs only
// the environment, and the scope where the command knows it.
func DeclaredEnvironment(ctx context.Context, getenv func(string) string, dir string, c runctx.Context) (environments.Environment, error) {
	rs, err := TrustedRules(ctx, getenv, OrDot(dir), c)
	if err != nil {
		return environments.Environment{}, err
	}
	return rs.Declared.Lookup(c.Environment)
}

// DeclaredIdentity is what the trusted rules declare about identity for
// env, for the commands that check ownership without a run.
func DeclaredIdentity(ctx context.Context, getenv func(string) string, dir, env string) (ownership.Declaration, error) {
	rs, err := TrustedRules(ctx, getenv, OrDot(dir), runctx.Context{Environment: env})
	if err != nil {
		return ownership.Declaration{}, err
	}
	e, err := rs.Declared.Lookup(env)
	if err != nil {
		return ownership.Declaration{}, err
	}
	return DeclarationOf(e, rs.Origin), nil
}

// DeclarationOf is what env declares about identity, read from origin.
func DeclarationOf(env environments.Environment, origin rules.Origin) ownership.Declaration {
	return ownership.Declaration{Schemes: env.Identity, AddressOwned: env.AddressOwned,
		From: ownership.Origin{Commit: origin.Commit, Trusted: origin.Trusted}}
}
