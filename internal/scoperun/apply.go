package scoperun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// apply is the eighth phase: the engine applies the saved plan, if it
// changes anything. applyErr is the engine's failure, which record writes
// down; lost is set when the run lost its lease, and then nothing more may
// be written: the run that took over is authoritative, and the lost run's
// receipt stays as its checkpoint.
func (r *runner) apply(bg context.Context, eng *engineRun, c *checked) (applyErr, lost error) {
	if c.changed {
		applyErr = eng.sess.Apply(eng.ctx, c.path)
	}
	if applyErr != nil {
		r.quarantineErrored(bg)
	}
	if lost = r.held.Err(); lost != nil {
		r.res.Status = receipt.StatusFailed
	}
	return applyErr, lost
}

// quarantineErrored moves the errored.tfstate an engine leaves in the
// configuration directory when a state write was refused (measured with
// OpenTofu 1.12: it writes the whole new state there, sensitive values
// included) into the store, so it never stays among the user's files.
func (r *runner) quarantineErrored(ctx context.Context) {
	p := filepath.Join(r.o.Dir, "errored.tfstate")
	fi, err := os.Stat(p)
	if err != nil || fi.ModTime().Before(r.started.Add(-time.Second)) {
		return
	}
	data, err := os.ReadFile(p)
	if err != nil {
		r.warn(fmt.Sprintf("the engine left %s and it could not be read: %v; remove it by hand, it may hold sensitive values", p, err))
		return
	}
	if err := r.o.Store.Quarantine(ctx, r.key, r.o.RunID, data); err != nil {
		r.warn(fmt.Sprintf("the engine left %s and it could not be quarantined in the store (%v); it stays there", p, err))
		return
	}
	os.Remove(p)
	r.res.Quarantined = true
	r.warn(fmt.Sprintf("the engine could not persist its state; the state it had is quarantined in the store as %s of %s, not left in %s", r.o.RunID, r.key, r.o.Dir))
}
