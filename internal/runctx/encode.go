package runctx

import (
	"encoding/json"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// Encode returns the context as the JSON that EnvVar carries.
func (c Context) Encode() (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", errcode.Wrap(errcode.Internal, err, "cannot encode the run context")
	}
	return string(b), nil
}

// Environ returns the EnvVar=<json> entry to append to a child process's
// environment (exec.Cmd.Env), so that the engine and the provider it starts
// use the context the wrapper decided instead of detecting their own.
func (c Context) Environ() []string {
	// Context holds only strings and an int, which json.Marshal cannot fail
	// on; Encode keeps its error for the API's sake.
	s, err := c.Encode()
	if err != nil {
		panic(err)
	}
	return []string{EnvVar + "=" + s}
}

// FromEnv reads the context a wrapper handed down in EnvVar. It returns
// ok=false and no error when EnvVar is unset or blank: the caller then
// detects on its own. A value that is not a valid context is an error, never
// a reason to fall back to detection, because the provider would then work
// in a scope the wrapper did not lease. Names are checked with ValidName as
// in Detect, since they still become paths. Unknown JSON fields are ignored
// so that a newer wrapper can hand a context to an older provider.
func FromEnv(getenv func(string) string) (Context, bool, error) {
	if getenv == nil {
		return Context{}, false, nil
	}
	raw := strings.TrimSpace(getenv(EnvVar))
	if raw == "" {
		return Context{}, false, nil
	}
	hint := EnvVar + " is set by the sponson wrapper for the engine it runs; unset it, or run the engine through sponson."
	var c Context
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return Context{}, false, errcode.Wrap(errcode.Internal, err, "%s does not hold a run context", EnvVar).WithHint(hint)
	}
	if err := c.validate(); err != nil {
		return Context{}, false, errcode.Wrap(errcode.Internal, err, "%s holds an invalid run context", EnvVar).WithHint(hint)
	}
	return c, true, nil
}

// validate checks what Detect guarantees of a context it returns.
func (c Context) validate() error {
	if err := ValidName("environment", c.Environment); err != nil {
		return err
	}
	if err := ValidName("scope", c.Scope); err != nil {
		return err
	}
	if c.Predecessor != "" {
		if err := ValidName("scope", c.Predecessor); err != nil {
			return err
		}
	}
	if c.PullRequest < 0 {
		return errcode.New(errcode.CtxNull, "pull request %d is negative", c.PullRequest)
	}
	return nil
}

// ShortCommit is the commit abbreviated to 7 characters, as git and the
// receipts show it; a shorter commit is returned whole.
func (c Context) ShortCommit() string {
	if len(c.Commit) > 7 {
		return c.Commit[:7]
	}
	return c.Commit
}
