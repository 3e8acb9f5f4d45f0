package verify_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store/verify"
)

// memory is an object store in memory that honours the conditions unless
// it is told to ignore some of them, as some S3-compatible servers do.
type memory struct {
	mu                          sync.Mutex
	objs                        map[string]int
	next                        int
	ignoreWrites, ignoreDeletes bool
	// keep makes Remove answer success and keep the object.
	keep bool
	// noVersions makes a write answer no version, as a server that sends
	// no ETag would; creates counts the writes without a version per key,
	// and emptyDeletes the deletes whose version was empty.
	noVersions   bool
	creates      map[string]int
	emptyDeletes int
}

func (m *memory) Write(_ context.Context, key string, _ []byte, ifMatch string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	want, _ := strconv.Atoi(ifMatch)
	if ifMatch == "" && m.creates != nil {
		m.creates[key]++
	}
	if !m.ignoreWrites {
		cur, ok := m.objs[key]
		if (want == 0 && ok) || (want != 0 && cur != want) {
			return "", verify.ErrConflict
		}
	}
	m.next++
	m.objs[key] = m.next
	if m.noVersions {
		return "", nil
	}
	return strconv.Itoa(m.next), nil
}

func (m *memory) DeleteIf(_ context.Context, key, version string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if version == "" {
		m.emptyDeletes++
	}
	if v, _ := strconv.Atoi(version); !m.ignoreDeletes && m.objs[key] != v {
		return verify.ErrConflict
	}
	delete(m.objs, key)
	return nil
}

func (m *memory) Remove(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.keep {
		delete(m.objs, key)
	}
	return nil
}

func (m *memory) List(_ context.Context, prefix string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k := range m.objs {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out, nil
}

func TestRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                        string
		ignoreWrites, ignoreDeletes bool
		want                        map[string]bool
	}{
		{"honours every condition", false, false, map[string]bool{"create-if-absent": true, "stale-version-refused": true, "one-winner": true, "conditional-delete": true}},
		{"ignores write conditions", true, false, map[string]bool{"create-if-absent": false, "stale-version-refused": false, "one-winner": false, "conditional-delete": true}},
		{"ignores delete conditions", false, true, map[string]bool{"create-if-absent": true, "stale-version-refused": true, "one-winner": true, "conditional-delete": false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := &memory{objs: map[string]int{}, ignoreWrites: tc.ignoreWrites, ignoreDeletes: tc.ignoreDeletes}
			r, err := verify.Run(t.Context(), m, "team/", 8)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Properties) != len(tc.want) {
				t.Fatalf("%d properties, want %d: %+v", len(r.Properties), len(tc.want), r.Properties)
			}
			allOK := true
			for _, p := range r.Properties {
				if p.OK != tc.want[p.Name] {
					t.Errorf("%s: OK %v, want %v (%s)", p.Name, p.OK, tc.want[p.Name], p.Detail)
				}
				allOK = allOK && tc.want[p.Name]
			}
			if r.OK() != allOK {
				t.Errorf("Report.OK() = %v, want %v", r.OK(), allOK)
			}
			if len(m.objs) != 0 || len(r.Leftover) != 0 {
				t.Errorf("the check left %v behind (leftover %v)", m.objs, r.Leftover)
			}
		})
	}
}

// TestRunListsThePrefixEmpty: a removal the server acknowledged but did not
// do is found by the listing that follows, and the report is not OK.
func TestRunListsThePrefixEmpty(t *testing.T) {
	t.Parallel()
	m := &memory{objs: map[string]int{}, keep: true}
	r, err := verify.Run(t.Context(), m, "team/", 4)
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() || len(r.Leftover) != len(m.objs) || len(m.objs) == 0 {
		t.Errorf("OK %v with leftover %v, want not OK and the %d objects left: %v", r.OK(), r.Leftover, len(m.objs), m.objs)
	}
	for _, k := range r.Leftover {
		if !strings.HasPrefix(k, r.Prefix) {
			t.Errorf("leftover %s is not under the check's prefix %s", k, r.Prefix)
		}
	}
}

// TestRunSendsNoEmptyVersion: on a server that answers writes with no
// version, a replace or a delete has no version to be conditional on. The
// check refuses them itself rather than send a write that would mean "only
// if absent" or a delete whose condition is empty: the properties that need
// a version fail, and the report says so.
func TestRunSendsNoEmptyVersion(t *testing.T) {
	t.Parallel()
	m := &memory{objs: map[string]int{}, noVersions: true, creates: map[string]int{}}
	r, err := verify.Run(t.Context(), m, "team/", 4)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"create-if-absent": true, "stale-version-refused": false, "one-winner": false, "conditional-delete": false}
	for _, p := range r.Properties {
		if p.OK != want[p.Name] {
			t.Errorf("%s: OK %v, want %v (%s)", p.Name, p.OK, want[p.Name], p.Detail)
		}
	}
	if r.OK() || m.emptyDeletes != 0 {
		t.Errorf("OK %v, %d deletes sent with an empty version; want not OK and none", r.OK(), m.emptyDeletes)
	}
	// Only create-if-absent writes its object twice without a version;
	// another second such write was a replace sent as "only if absent".
	for k, n := range m.creates {
		if n > 1 && !strings.HasSuffix(k, "/create") {
			t.Errorf("%s was written %d times without a version", k, n)
		}
	}
}

// TestNotConforming: the error names the store, the object written and the
// condition the server ignored, and its hint the check to run.
func TestNotConforming(t *testing.T) {
	t.Parallel()
	err := verify.NotConforming("GCS", "gs://b/team", "gs://b/team/.sponson-layout", "ifGenerationMatch=0")
	e := errcode.As(err)
	if e == nil || e.Code != errcode.StoreNotConforming {
		t.Fatalf("NotConforming = %v, want STORE_NOT_CONFORMING", err)
	}
	want := "the server of the GCS store gs://b/team accepted a create of an object that exists (gs://b/team/.sponson-layout, ifGenerationMatch=0): it ignores the condition that keeps two runs from both taking a new scope's lease, so the store refuses to write on it"
	if e.Message != want {
		t.Errorf("message\n%s\nwant\n%s", e.Message, want)
	}
	if e.Details["store"] != "gs://b/team" {
		t.Errorf("details %v, want the store's URL under store", e.Details)
	}
	if !strings.Contains(e.Hint, "sponson store verify --store gs://b/team") {
		t.Errorf("hint %q does not name the check", e.Hint)
	}
}
