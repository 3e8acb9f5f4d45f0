package storeurl

import (
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// openPostgres opens the PostgreSQL store at a postgres:// URL.
func openPostgres(raw string) (store.Store, string, error) {
	return nil, "", errcode.New(errcode.Usage, "--store %q: the PostgreSQL store is not in this build yet", Redact(raw))
}
