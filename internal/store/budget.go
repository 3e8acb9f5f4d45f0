package store

import (
	"strconv"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// EnvBudget is how long a store retries a contended or briefly unavailable
// backend before it reports STORE_CONTENDED or STORE_UNAVAILABLE: a Go
// duration ("90s", "2m") or a number of seconds ("90").
const EnvBudget = "SPONSON_STORE_BUDGET"

// BudgetFromEnv reads EnvBudget through getenv, for every backend that
// retries: 0 when it is unset or empty (the backend's default). A value that
// is not a positive duration is a USAGE error, never a silent default.
func BudgetFromEnv(getenv func(string) string) (time.Duration, error) {
	raw := strings.TrimSpace(getenv(EnvBudget))
	if raw == "" {
		return 0, nil
	}
	if secs, err := strconv.ParseFloat(raw, 64); err == nil && secs > 0 && secs <= maxBudgetSeconds {
		return time.Duration(secs * float64(time.Second)), nil
	}
	if d, err := time.ParseDuration(raw); err == nil && d > 0 {
		return d, nil
	}
	return 0, errcode.New(errcode.Usage, "%s=%q is not a positive duration (e.g. 60s, 2m, or 90 for seconds)", EnvBudget, raw)
}

// maxBudgetSeconds keeps a number of seconds inside time.Duration, so that
// "1e30" or "inf" is refused rather than overflowing into a negative budget.
const maxBudgetSeconds = float64(1<<63-1) / float64(time.Second)
