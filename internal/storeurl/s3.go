package storeurl

import (
	"context"

	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/store/s3store"
)

// openS3 opens the S3 store at an s3:// URL. Credentials and region come
// from the standard AWS chain of the environment (which the provider the
// engine starts inherits); the URL carries none, so the URL as given is
// also what is printed, less anything but bucket, prefix, endpoint and
// region.
func openS3(raw string, getenv func(string) string) (store.Store, string, error) {
	opts, err := s3store.FromEnv(getenv)
	if err != nil {
		return nil, "", err
	}
	st, err := s3store.Open(context.Background(), raw, opts...)
	if err != nil {
		return nil, "", err
	}
	return st, st.Display(), nil
}
