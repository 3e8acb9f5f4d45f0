package storeurl

import (
	"context"
	"os"

	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/pgstore"
)

// openPostgres opens the PostgreSQL store at a postgres:// URL. It returns
// the URL without its password: that is what is printed and handed over to
// the provider, which therefore needs the password from PGPASSWORD or
// ~/.pgpass, never from the URL.
func openPostgres(raw string, old bool) (store.Store, string, error) {
	shown := Redact(raw)
	budget, err := store.BudgetFromEnv(os.Getenv)
	if err != nil {
		return nil, "", err
	}
	opts := []pgstore.Option{pgstore.WithBudget(budget)}
	if old {
		opts = append(opts, pgstore.WithOldLayout())
	}
	st, err := pgstore.Open(context.Background(), raw, opts...)
	if err != nil {
		return nil, "", err
	}
	return st, shown, nil
}
