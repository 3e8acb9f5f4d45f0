package storeurl

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/pgstore"
)

// budgetEnv sets how long a PostgreSQL operation retries a store that cannot
// be reached, as a Go duration ("90s") or seconds ("90").
const budgetEnv = "SPONSON_STORE_BUDGET"

// openPostgres opens the PostgreSQL store at a postgres:// URL. It returns
// the URL without its password: that is what is printed and handed over to
// the provider, which therefore needs the password from PGPASSWORD or
// ~/.pgpass, never from the URL.
func openPostgres(raw string, old bool) (store.Store, string, error) {
	shown := Redact(raw)
	var opts []pgstore.Option
	if v := strings.TrimSpace(os.Getenv(budgetEnv)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			n, nerr := strconv.Atoi(v)
			d, err = time.Duration(n)*time.Second, nerr
		}
		if err != nil || d <= 0 {
			return nil, "", errcode.New(errcode.Usage, "%s=%q is not a duration", budgetEnv, v).WithHint("Use a Go duration such as 90s or 2m, or a number of seconds.")
		}
		opts = append(opts, pgstore.WithBudget(d))
	}
	if old {
		opts = append(opts, pgstore.WithOldLayout())
	}
	st, err := pgstore.Open(context.Background(), raw, opts...)
	if err != nil {
		return nil, "", err
	}
	return st, shown, nil
}
