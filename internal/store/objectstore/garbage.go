package objectstore

import (
	"context"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// DefaultGarbageAge is how old an unreferenced body must be before
// CollectGarbage deletes it: far longer than any lease TTL, so a body whose
// pointer is about to move (written, its PUT of the pointer in flight) is
// never taken. A run stopped between the two for longer than its TTL has
// lost its lease, and its pointer PUT is refused anyway.
const DefaultGarbageAge = 24 * time.Hour

// CollectGarbage deletes the bodies of env that no pointer names any more
// and that are older than minAge (DefaultGarbageAge when zero): ownership
// parts, states and records that a crash left between writing a new body
// and deleting the old one (see the package comment). Receipts are history
// and quarantined states evidence: neither is collected. Nothing under a
// scope without a pointer is touched. It returns how many objects it
// deleted.
func (s *Store) CollectGarbage(ctx context.Context, env string, minAge time.Duration) (int, error) {
	if err := s.objects.Ready(ctx, true); err != nil {
		return 0, err
	}
	if err := store.CheckName("environment", env); err != nil {
		return 0, err
	}
	if minAge <= 0 {
		minAge = DefaultGarbageAge
	}
	referenced := map[string]map[string]bool{} // scope id -> body names
	err := s.refresh(ctx, env, need{receipt: true}, func(scopes map[string]*entry) error {
		for id, e := range scopes {
			p := e.Pointer
			names := map[string]bool{p.Receipt: true, p.Owners: true, p.State: true}
			for _, r := range p.Records {
				names[r] = true
			}
			referenced[id] = names
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	objs, err := s.objects.List(ctx, s.prefix+env+"/")
	if err != nil {
		return 0, err
	}
	// The server's clock: the newest Last-Modified listed is no later than
	// its now, so ages are never judged by the runner's clock alone.
	now := s.now()
	for _, o := range objs {
		if o.At.After(now) {
			now = o.At
		}
	}
	deleted := 0
	for _, o := range objs {
		rest := strings.TrimPrefix(o.Key, s.prefix+env+"/")
		id, name, ok := cutBody(rest)
		if !ok || referenced[id] == nil || referenced[id][name] || now.Sub(o.At) < minAge {
			continue
		}
		if err := s.objects.Delete(ctx, o.Key); err != nil {
			return deleted, err
		}
		deleted++
	}
	return deleted, nil
}

// cutBody splits <scope id>/<kind>/<name> for the kinds a pointer names and
// garbage can be left of; ok is false for everything else (receipts,
// quarantine, pointers, caches). A scope id has as many segments as scopeID
// makes, whatever the names in it.
func cutBody(rest string) (id, name string, ok bool) {
	depth := strings.Count(scopeID(store.Key{Environment: "e", Scope: "s"}), "/") + 1
	parts := strings.SplitN(rest, "/", depth+2)
	if len(parts) != depth+2 {
		return "", "", false
	}
	switch kind := parts[depth]; kind {
	case "owners", "state", "records":
		return strings.Join(parts[:depth], "/"), kind + "/" + parts[depth+1], true
	}
	return "", "", false
}
