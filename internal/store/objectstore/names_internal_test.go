package objectstore

import (
	"strings"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/store/storetest"
)

// Messages name the store as its Config does: "the S3 store", an object
// as s3://BUCKET/KEY.
func TestMessagesNameTheStore(t *testing.T) {
	t.Parallel()
	m := newMemBucket(nil)
	s := open(t, m, func(c *Config) { c.Name, c.Scheme, c.Bucket = "S3", "s3", "bkt" })
	g, err := s.Acquire(t.Context(), k1, "run-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Put(t.Context(), "p/preview/.owners.log.json", []byte("{")); err != nil {
		t.Fatal(err)
	}
	err = s.WriteReceipt(t.Context(), g.Lease, storetest.NewReceipt(k1, "run-a", 1))
	if err == nil || !strings.Contains(err.Error(), "the ownership log s3://bkt/p/preview/.owners.log.json does not parse") {
		t.Errorf("WriteReceipt over a damaged log = %v, want it named s3://bkt/p/preview/.owners.log.json", err)
	}
	noKey := open(t, m, func(c *Config) { c.Name, c.StateKey = "S3", nil })
	if err := noKey.CheckState(k1); err == nil || !strings.Contains(err.Error(), "the S3 store does not write state unencrypted") {
		t.Errorf("CheckState without a key = %v, want the S3 store named", err)
	}
}
