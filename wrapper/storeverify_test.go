package wrapper

import (
	"context"
	"strings"
	"testing"
)

// TestStoreVerifyRefusesWhatIsNotAnObjectStore: store verify proves object
// stores only; the file, git and PostgreSQL stores are refused with USAGE,
// saying what fences them, before anything is opened.
func TestStoreVerifyRefusesWhatIsNotAnObjectStore(t *testing.T) {
	for _, c := range []struct{ store, says string }{
		{"file://" + t.TempDir(), "fencing is the file lock"},
		{"git", "fencing is the ref's"},
		{"git+file:///nowhere", "fencing is the ref's"},
		{"postgres://db.invalid/sponson", "fencing is the database's"},
		{"", "needs --store"},
		{"ftp://x/y", "not an object store URL"},
	} {
		f, out, _ := testFactory(nil)
		code := runWith(context.Background(), []string{"store", "verify", "--json", "--store", c.store}, f, nil)
		env := decode(t, out)
		if code != 2 || env.Error == nil || env.Error.Code != "USAGE" || !strings.Contains(env.Error.Message, c.says) {
			t.Errorf("store verify --store %q: exit %d, error %+v; want exit 2 USAGE saying %q", c.store, code, env.Error, c.says)
		}
	}
	f, out, _ := testFactory(nil)
	code := runWith(context.Background(), []string{"store", "verify", "--json", "--store", "s3://b/p", "--writers", "1"}, f, nil)
	if env := decode(t, out); code != 2 || env.Error == nil || env.Error.Code != "USAGE" {
		t.Errorf("--writers 1: exit %d, error %+v; want USAGE", code, env.Error)
	}
}
