package verify_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

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
}

func (m *memory) put(key string, want int, check bool) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if check && !m.ignoreWrites {
		cur, ok := m.objs[key]
		if (want == 0 && ok) || (want != 0 && cur != want) {
			return "", verify.ErrConflict
		}
	}
	m.next++
	m.objs[key] = m.next
	return strconv.Itoa(m.next), nil
}

func (m *memory) Create(_ context.Context, key string, _ []byte) (string, error) {
	return m.put(key, 0, true)
}

func (m *memory) Replace(_ context.Context, key string, _ []byte, version string) (string, error) {
	v, _ := strconv.Atoi(version)
	return m.put(key, v, true)
}

func (m *memory) Delete(_ context.Context, key, version string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
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
