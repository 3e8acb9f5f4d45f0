package objectstore

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// State is sealed in the bucket; without a key it is refused unless
// plaintext was asked for; bodies the pointer no longer names are gone.
func TestStateAtRest(t *testing.T) {
	t.Parallel()
	m := newMemBucket(nil)
	s := open(t, m)
	g, err := s.Acquire(t.Context(), k1, "run-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := s.WriteState(t.Context(), g.Lease, fmt.Appendf(nil, `{"serial":%d,"secret":"hunter2"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	states := 0
	for name, data := range m.objects("p/") {
		if bytes.Contains(data, []byte("hunter2")) {
			t.Errorf("%s holds the state in the clear", name)
		}
		if strings.HasPrefix(name, "preview/acme_2fapp/pr-1/state/") {
			states++
			if !strings.HasSuffix(name, ".tfstate.sealed") {
				t.Errorf("state body %s is not sealed", name)
			}
		}
	}
	if states != 1 {
		t.Errorf("%d state bodies in the bucket, want 1 (replaced ones are deleted)", states)
	}

	noKey := open(t, m, func(c *Config) { c.StateKey = nil })
	if _, err := noKey.ReadState(t.Context(), k1); !errcode.Is(err, errcode.Usage) {
		t.Errorf("ReadState without the key = %v, want USAGE", err)
	}
	k2 := store.Key{Stack: "acme/app", Environment: "preview", Scope: "pr-2"}
	g2, err := noKey.Acquire(t.Context(), k2, "run-b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := noKey.WriteState(t.Context(), g2.Lease, []byte("{}")); !errcode.Is(err, errcode.Usage) {
		t.Errorf("WriteState without a key = %v, want USAGE", err)
	}
	plain := open(t, m, func(c *Config) { c.StateKey, c.PlaintextState = nil, true })
	if err := plain.WriteState(t.Context(), g2.Lease, []byte(`{"clear":true}`)); err != nil {
		t.Fatalf("WriteState with plaintext allowed: %v", err)
	}
	if got, err := s.ReadState(t.Context(), k2); err != nil || string(got) != `{"clear":true}` {
		t.Errorf("ReadState of a plaintext state = %q, %v", got, err)
	}
}
