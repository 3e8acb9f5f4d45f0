package objectstore

import (
	"fmt"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// BenchmarkOwnersIndexCold is the part of a cold foreign check that runs
// in the process (docs/design.md §8): decoding the stored owners index of
// 10,000 scopes × 50 resources, taking its rows into the cache and finding
// the owners of 50 identities in it, without the GETs.
func BenchmarkOwnersIndexCold(b *testing.B) {
	const scopes, per = 10000, 50
	data, err := encodeOwnersIndex(syntheticOwnersIndex(scopes, per))
	if err != nil {
		b.Fatal(err)
	}
	want := map[string]bool{}
	for j := range per {
		want[fmt.Sprintf(`p|fixture_object|name="s%d-o%d"`, j*scopes/per, j)] = true
	}
	for b.Loop() {
		idx, err := decodeOwnersIndex(data)
		if err != nil {
			b.Fatal(err)
		}
		c := &envCache{etags: map[string]string{}, scopes: map[string]*entry{}}
		c.takeOwners(idx, nil)
		found := 0
		for _, e := range c.scopes {
			e.Owners.each(want, func(store.Owner) { found++ })
		}
		if found != per {
			b.Fatalf("found %d owners of %d identities", found, per)
		}
	}
	b.ReportMetric(float64(len(data))/(1<<20), "stored-MiB")
	b.ReportMetric(float64(plainSize(data))/(1<<20), "plain-MiB")
}

// syntheticOwnersIndex is an owners index of scopes scopes × per entries,
// as of a state of the ownership log.
func syntheticOwnersIndex(scopes, per int) ownersIndex {
	doc := ownersIndex{Version: indexVersion, Scopes: map[string]ownersRow{}, Log: logState{ok: true, epoch: "e1", seq: 42}}
	for i := range scopes {
		row := ownersRow{ETag: fmt.Sprintf(`"etag-%d"`, i), Key: fmt.Sprintf("owners/run-%d.json", i), RunID: fmt.Sprintf("run-%d", i)}
		for j := range per {
			row.Entries = append(row.Entries, ownerRow{Identity: fmt.Sprintf(`p|fixture_object|name="s%d-o%d"`, i, j), Address: fmt.Sprintf("fixture_object.o%d", j), CreatedBy: "sponson", Since: int64(1700000000000000000 + j)})
		}
		doc.Scopes[fmt.Sprintf("acme_2fapp/pr-%d", i)] = row
	}
	return doc
}
