package gitstore

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/gitcli"
)

// Origin returns the URL of the remote origin of the git repository that
// holds dir, as `--store git` uses it. A relative local path is made
// absolute against the working tree's top level, where git resolves it.
// Without a repository or an origin it is a USAGE error.
func Origin(ctx context.Context, dir string) (string, error) {
	out, err := checkoutGit(ctx, dir, "remote", "get-url", "origin")
	if err != nil {
		if _, rerr := checkoutGit(ctx, dir, "rev-parse", "--git-dir"); rerr != nil {
			return "", errcode.New(errcode.Usage, "--store git stores in the remote origin of the configuration's repository, but %s is not in a git repository", dir).
				WithHint("Name the remote: --store git+URL (e.g. git+https://github.com/OWNER/REPO.git), or run from a clone.")
		}
		return "", errcode.New(errcode.Usage, "--store git stores in the remote origin of the configuration's repository, but the repository of %s has no remote origin", dir).
			WithHint("Add one (git remote add origin URL) or name the remote: --store git+URL.")
	}
	remote := strings.TrimSpace(string(out))
	if remote == "" {
		return "", errcode.New(errcode.Usage, "the remote origin of the repository of %s has no URL", dir).WithHint("Name the remote: --store git+URL.")
	}
	if isLocalPath(remote) && !filepath.IsAbs(remote) {
		top, err := checkoutGit(ctx, dir, "rev-parse", "--show-toplevel")
		if err == nil && len(bytes.TrimSpace(top)) > 0 {
			remote = filepath.Join(strings.TrimSpace(string(top)), remote)
		}
	}
	return remote, nil
}

// checkoutConfigKeys are the settings of a checkout that decide how `git
// push` authenticates from it: actions/checkout keeps its token in the
// checkout's http.<url>.extraheader, not in a global file.
var checkoutConfigKeys = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(http\..*|credential\..*|url\..*|core\.sshcommand)$`)
})

// CheckoutOptions returns the authentication settings of the local
// configuration of the repository that holds dir (http.*, credential.*,
// url.*, core.sshCommand) as WithGitConfig options, so that the store
// pushes with the credentials `git push` would use from that checkout. None
// when dir is not in a repository.
func CheckoutOptions(ctx context.Context, dir string) []Option {
	out, err := checkoutGit(ctx, dir, "config", "--local", "--null", "--get-regexp", `^(http|credential|url|core)\.`)
	if err != nil {
		return nil
	}
	var opts []Option
	for _, item := range strings.Split(string(out), "\x00") {
		key, value, _ := strings.Cut(item, "\n")
		if key != "" && checkoutConfigKeys().MatchString(strings.ToLower(key)) {
			opts = append(opts, WithGitConfig(key, value))
		}
	}
	return opts
}

func checkoutGit(ctx context.Context, dir string, args ...string) ([]byte, error) {
	out, _, err := gitcli.Cmd{Dir: dir, Args: args}.Run(ctx)
	return out, err
}

// isLocalPath reports whether a remote is a path rather than a URL or an
// scp-like address (host:path), by git's own rule: a colon before the first
// slash makes it remote.
func isLocalPath(remote string) bool {
	colon := strings.Index(remote, ":")
	slash := strings.Index(remote, "/")
	return colon < 0 || (slash >= 0 && slash < colon)
}
