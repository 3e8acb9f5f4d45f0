package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

func TestBudgetFromEnv(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]time.Duration{
		"":      0,
		"  ":    0,
		"90":    90 * time.Second,
		" 1.5 ": 1500 * time.Millisecond,
		"2m":    2 * time.Minute,
		"1h30m": 90 * time.Minute,
		"250ms": 250 * time.Millisecond,
	} {
		got, err := store.BudgetFromEnv(func(k string) string {
			if k != store.EnvBudget {
				t.Errorf("read %s", k)
			}
			return raw
		})
		if err != nil || got != want {
			t.Errorf("%s=%q: %s, %v; want %s", store.EnvBudget, raw, got, err, want)
		}
	}
	for _, raw := range []string{"soon", "-5", "0", "0s", "-1m", "inf", "NaN", "1e30"} {
		_, err := store.BudgetFromEnv(func(string) string { return raw })
		if !errcode.Is(err, errcode.Usage) || !strings.Contains(err.Error(), "is not a positive duration") {
			t.Errorf("%s=%q: %v, want USAGE", store.EnvBudget, raw, err)
		}
	}
}
