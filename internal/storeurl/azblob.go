package storeurl

import (
	"context"

	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/azblobstore"
)

// openAzblob opens the Azure store at an azblob:// URL. Credentials come
// from AZURE_STORAGE_KEY or DefaultAzureCredential's variables in the
// environment (which the provider the engine starts inherits); the URL
// carries none. Opening makes no request.
func openAzblob(raw string, getenv func(string) string) (store.Store, string, error) {
	opts, err := azblobstore.FromEnv(getenv)
	if err != nil {
		return nil, "", err
	}
	st, err := azblobstore.Open(context.Background(), raw, opts...)
	if err != nil {
		return nil, "", err
	}
	return st, st.Display(), nil
}
