package scoperun

import "github.com/sponson/terraform-provider-sponson/internal/store"

// The leases a run takes (its scope's in acquire, the environment's intent
// and hash-key leases, parent objects', the scopes reindex re-indexes) all
// describe the run the same way to whoever waits for them.

// holderInfo describes this run for the lease records it takes.
func (r *runner) holderInfo() store.HolderInfo {
	return store.HolderInfo{
		JobURL: r.o.Job.URL, Actor: r.o.Job.Actor, Host: r.o.Host,
		Commit: r.o.Context.Commit, PullRequest: r.o.Context.PullRequest,
	}
}
