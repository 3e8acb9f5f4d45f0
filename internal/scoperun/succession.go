package scoperun

import "github.com/sponson/terraform-provider-sponson/internal/succession"

// foreignExcept is the scope whose ownership entries the foreign check
// leaves out: a predecessor whose resources are promised to this scope
// through the run's handover h (nil: none). The check, commit and record
// phases all check against it.
func foreignExcept(h *succession.Handover) string {
	if h == nil {
		return ""
	}
	pred, _ := h.Predecessor()
	return pred
}
