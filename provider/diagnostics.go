package provider

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/lease"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// The diagnostics the provider reports for store and lease failures, in one
// place so that each failure reads the same from every resource: a Title
// Case summary, then the error code, what happened and what to do, and the
// original error last.

// handoverDiag reports a lease hand-over that cannot be used.
func handoverDiag(key store.Key, err error) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Invalid Lease Hand-Over",
		fmt.Sprintf("%s: the sponson wrapper hands its lease of %s to the provider in %s, %s and %s, but they "+
			"are incomplete or malformed, so the provider wrote nothing. It does not take a lease of its own "+
			"instead, because the run it belongs to may hold the scope. Unset all three variables to apply "+
			"without the wrapper, or run the apply through sponson.\n\n%s",
			codeOf(err), key, lease.EnvStore, lease.EnvHolder, lease.EnvToken, err))
}

// writeErrorDiag reports a fenced write that failed.
func writeErrorDiag(key store.Key, err error) diag.Diagnostic {
	if errors.Is(err, store.ErrLeaseLost) {
		return diag.NewErrorDiagnostic("Lease Lost",
			fmt.Sprintf("%s: this run lost its lease of %s (it expired or another run took the scope over), so "+
				"the store refused the provider's write and nothing was written: a run that lost its lease "+
				"cannot write through its provider either. Run the apply again; the run that took over is "+
				"authoritative.\n\n%s", errcode.LockLost, key, err))
	}
	return storeErrorDiag("Scope Record Not Written",
		fmt.Sprintf("The sponson provider could not write the scope record of %s to the store.", key), err)
}

// acquireErrorDiag reports a scope lease the provider could not take.
func acquireErrorDiag(key store.Key, err error) diag.Diagnostic {
	var ce *errcode.Error
	if !errors.As(err, &ce) || ce.Code != errcode.LockHeld {
		return storeErrorDiag("Scope Lease Not Acquired",
			fmt.Sprintf("The sponson provider could not take the lease of %s to write the scope record, so it "+
				"wrote nothing.", key), err)
	}
	holder, _ := ce.Details["holder"].(string)
	who := "another run"
	if holder != "" {
		who = "run " + holder
	}
	until := ""
	if t, ok := ce.Details["expiresAt"].(time.Time); ok && !t.IsZero() {
		until = " until " + t.UTC().Format(time.RFC3339)
	}
	return diag.NewErrorDiagnostic("Scope Leased By Another Run",
		fmt.Sprintf("%s: scope %s is leased by %s%s, so the sponson provider did not write the scope record. "+
			"Wait for that run to finish and apply again, or apply through the wrapper with `sponson apply "+
			"--wait`, which queues behind it.\n\n%s", errcode.LockHeld, key, who, until, err))
}

// storeErrorDiag reports any other store failure: the code, what happened,
// the code's hint, and the original error last.
func storeErrorDiag(summary, what string, err error) diag.Diagnostic {
	ce := errcode.As(err)
	detail := fmt.Sprintf("%s: %s", ce.Code, what)
	if ce.Hint != "" {
		detail += " " + ce.Hint
	}
	return diag.NewErrorDiagnostic(summary, detail+"\n\n"+err.Error())
}

// takeErrorDiag reports why lease.Take did not get the lease: held by
// another run, a wait that timed out or was interrupted, or the store.
func takeErrorDiag(s leaseState, url string, opts leaseOptions, err error) diag.Diagnostic {
	e := errcode.As(err)
	holder, _ := e.Details["holder"].(string)
	expires, _ := e.Details["expiresAt"].(time.Time)
	switch {
	case errcode.Is(err, errcode.LockHeld):
		return diag.NewErrorDiagnostic("Lease Held By Another Run",
			fmt.Sprintf("%s: the lease on %s is held by %s until %s, so sponson_lease did not take it. Wait "+
				"for that run to finish and apply again, or set wait = true to queue behind it.\n\n%s",
				errcode.LockHeld, s.describe(), holder, expires.UTC().Format(time.RFC3339), err))
	case errcode.Is(err, errcode.WaitTimeout):
		return diag.NewErrorDiagnostic("Lease Wait Timed Out",
			fmt.Sprintf("%s: sponson_lease waited %s for the lease on %s, which is still held by %s until %s. "+
				"Raise wait_timeout_seconds, or find the run that holds the lease.\n\n%s",
				errcode.WaitTimeout, opts.waitTimeout, s.describe(), holder, expires.UTC().Format(time.RFC3339), err))
	case errcode.Is(err, errcode.Interrupted) && holder != "":
		return diag.NewErrorDiagnostic("Lease Wait Interrupted",
			fmt.Sprintf("%s: sponson_lease stopped waiting for the lease on %s, held by %s, because the engine "+
				"was interrupted.\n\n%s", errcode.Interrupted, s.describe(), holder, err))
	case errcode.Is(err, errcode.Interrupted) && opts.wait:
		return diag.NewErrorDiagnostic("Lease Wait Interrupted",
			fmt.Sprintf("%s: the engine stopped waiting for the lease on %s before it was free.\n\n%s",
				errcode.Interrupted, s.describe(), err))
	}
	return storeErrorDiag("Lease Not Acquired",
		fmt.Sprintf("The sponson provider could not take the lease on %s in the store %s.",
			s.describe(), describeStore(url, s.Dir)), err)
}

// leaseLostDiag reports a lease this run no longer holds.
func leaseLostDiag(s leaseState, why string, err error) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Lease Lost",
		fmt.Sprintf("%s: this run lost the lease on %s (holder %s, token %d): %s. Another run may have written "+
			"the object while this run did, so entries may be missing: apply again to restore them.\n\n%s",
			errcode.LockLost, s.describe(), s.Holder, s.Token, why, err))
}

// storeWarningDiag is storeErrorDiag as a warning.
func storeWarningDiag(summary, what string, err error) diag.Diagnostic {
	d := storeErrorDiag(summary, what, err)
	return diag.NewWarningDiagnostic(d.Summary(), d.Detail())
}

// codeOf returns the code an error carries, INTERNAL when none.
func codeOf(err error) errcode.Code { return errcode.As(err).Code }
