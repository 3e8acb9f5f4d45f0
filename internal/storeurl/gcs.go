package storeurl

import (
	"context"

	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/gcsstore"
)

// openGCS opens the GCS store at a gs:// URL. Credentials come from
// application default credentials, and an emulator from
// STORAGE_EMULATOR_HOST, in the environment (which the provider the engine
// starts inherits); the URL carries neither, so the URL as given is also
// what is printed. Opening makes no request: the first operation finds the
// credential.
func openGCS(raw string, getenv func(string) string) (store.Store, string, error) {
	opts, err := gcsstore.FromEnv(getenv)
	if err != nil {
		return nil, "", err
	}
	st, err := gcsstore.Open(context.Background(), raw, opts...)
	if err != nil {
		return nil, "", err
	}
	return st, st.Display(), nil
}
