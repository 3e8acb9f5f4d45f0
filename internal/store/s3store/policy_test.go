package s3store_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/store/s3store"
)

func TestPrefixPolicy(t *testing.T) {
	doc, err := s3store.PrefixPolicy("state", map[string]string{"arn:aws:iam::1:role/app": "/acme/app/", "arn:aws:iam::1:role/web": "acme/web"})
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Statement []struct {
			Principal map[string][]string
			Resource  []string
			Condition map[string]map[string][]string
		}
	}
	if err := json.Unmarshal([]byte(doc), &p); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	want := map[string]string{"arn:aws:iam::1:role/app": "acme/app/", "arn:aws:iam::1:role/web": "acme/web/"}
	if len(p.Statement) != 4 {
		t.Fatalf("%d statements, want an object and a list statement per principal:\n%s", len(p.Statement), doc)
	}
	for _, s := range p.Statement {
		prefix := want[s.Principal["AWS"][0]]
		if s.Condition == nil {
			if s.Resource[0] != "arn:aws:s3:::state/"+prefix+"*" {
				t.Errorf("objects of %v: %v, want under %s", s.Principal, s.Resource, prefix)
			}
		} else if got := s.Condition["StringLike"]["s3:prefix"]; len(got) != 1 || got[0] != prefix+"*" {
			t.Errorf("listing of %v: %v, want under %s", s.Principal, got, prefix)
		}
	}
	for name, prefixes := range map[string]map[string]string{
		"empty prefix":  {"a": ""},
		"nested":        {"a": "acme", "b": "acme/app"},
		"bad segment":   {"a": "acme/../x"},
		"no principals": {},
	} {
		if _, err := s3store.PrefixPolicy("state", prefixes); err == nil {
			t.Errorf("%s: accepted", name)
		} else if name == "nested" && !strings.Contains(err.Error(), "do not nest") {
			t.Errorf("nested: %v", err)
		}
	}
}
