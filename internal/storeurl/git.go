package storeurl

import (
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// openGit opens the git store: "git" means the remote origin of the
// configuration's repository, "git+URL" the remote at URL.
func openGit(raw, configDir string) (store.Store, string, error) {
	return nil, "", errcode.New(errcode.Usage, "--store %q: the git store is not in this build yet", Redact(raw))
}
