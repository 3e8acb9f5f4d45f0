package storeurl

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/gitstore"
)

// openGit opens the git store: "git" means the remote origin of the
// configuration's repository, "git+URL" the remote at URL (git+file:///path,
// git+https://..., git+ssh://...). Either way the store pushes with the
// authentication settings of the configuration's checkout, as `git push`
// from it would. It returns the URL without credentials ("git+" and the
// remote): that is what is printed and handed over to the provider, which
// therefore needs credentials from the checkout or a credential helper,
// never from the URL.
func openGit(raw, configDir string, old bool, getenv func(string) string) (store.Store, string, error) {
	ctx := context.Background()
	remote := strings.TrimPrefix(raw, "git+")
	if raw == "git" {
		origin, err := gitstore.Origin(ctx, configDir)
		if err != nil {
			return nil, "", err
		}
		remote = origin
	}
	if strings.TrimSpace(remote) == "" {
		return nil, "", errcode.New(errcode.Usage, "--store %q names no remote", raw).
			WithHint("Use --store git (the remote origin) or --store git+URL, e.g. git+https://github.com/OWNER/REPO.git.")
	}
	shown := "git+" + gitstore.Redact(remote)
	opts, err := gitstore.FromEnv(getenv)
	if err != nil {
		return nil, "", err
	}
	opts = append(opts, gitstore.WithFallbackDir(filepath.Join(configDir, DefaultDir, "unpushed")))
	opts = append(opts, gitstore.CheckoutOptions(ctx, configDir)...)
	if old {
		opts = append(opts, gitstore.WithOldLayout())
	}
	st, err := gitstore.Open(ctx, remote, opts...)
	if err != nil {
		return nil, "", err
	}
	return st, shown, nil
}
