package lease

import (
	"strconv"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// The variables through which the wrapper hands its lease to the provider
// the engine starts. The provider then writes under the run's lease (fenced
// by the same token) instead of taking one of its own: a provider write after
// the run lost its lease is refused like any other write of the run.
const (
	EnvStore  = "SPONSON_RUN_STORE"
	EnvHolder = "SPONSON_RUN_HOLDER"
	EnvToken  = "SPONSON_RUN_TOKEN"
)

// HandoverEnv returns the variables that hand l and its store to a child.
func HandoverEnv(storeURL string, l store.Lease) []string {
	return []string{
		EnvStore + "=" + storeURL,
		EnvHolder + "=" + l.Holder,
		EnvToken + "=" + strconv.FormatInt(l.Token, 10),
	}
}

// FromHandover reads a lease handed over by the wrapper for the scope key.
// ok is false when nothing was handed over; a partial or malformed hand-over
// is an error, never a reason to take a lease of one's own.
func FromHandover(getenv func(string) string, key store.Key) (storeURL string, l store.Lease, ok bool, err error) {
	storeURL = strings.TrimSpace(getenv(EnvStore))
	holder := strings.TrimSpace(getenv(EnvHolder))
	token := strings.TrimSpace(getenv(EnvToken))
	if storeURL == "" && holder == "" && token == "" {
		return "", store.Lease{}, false, nil
	}
	n, perr := strconv.ParseInt(token, 10, 64)
	if storeURL == "" || holder == "" || perr != nil || n < 1 {
		return "", store.Lease{}, false, errcode.New(errcode.Internal,
			"incomplete lease hand-over: %s=%q %s=%q %s=%q", EnvStore, storeURL, EnvHolder, holder, EnvToken, token).
			WithHint("These variables are set by sponson for the engine it runs; unset them, or run the engine through sponson.")
	}
	return storeURL, store.Lease{Key: key, Holder: holder, Token: n}, true, nil
}
