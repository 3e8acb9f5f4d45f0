package cmdutil

import (
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/engine"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// RunSummary is a receipt in one line.
type RunSummary struct {
	RunID       string    `json:"runId"`
	Command     string    `json:"command"`
	Status      string    `json:"status"`
	FinishedAt  time.Time `json:"finishedAt,omitzero"`
	StartedAt   time.Time `json:"startedAt"`
	Commit      string    `json:"commit,omitempty"`
	Branch      string    `json:"branch,omitempty"`
	PullRequest int       `json:"pullRequest,omitempty"`
	ApprovedBy  string    `json:"approvedBy,omitempty"`
}

// Summarize returns the one-line form of a receipt, nil for none.
func Summarize(r *receipt.Receipt) *RunSummary {
	if r == nil {
		return nil
	}
	return &RunSummary{
		RunID: r.RunID, Command: r.Command, Status: r.Status, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
		Commit: r.Commit, Branch: r.Branch, PullRequest: r.PullRequest, ApprovedBy: r.ApprovedBy,
	}
}

// When is the time the run finished, or started if it never finished.
func (r *RunSummary) When() time.Time {
	if r.FinishedAt.IsZero() {
		return r.StartedAt
	}
	return r.FinishedAt
}

// OutcomeText is the run's outcome in a word or two: the status alone when
// it names the command (applied, destroyed), else command and status
// ("apply failed", "destroy running"); an unlock says so, with the outcome
// of the run before it ("unlocked (last run failed)").
func (r *RunSummary) OutcomeText() string {
	if r.Command == "unlock" {
		// An unlock's receipt carries the scope's standing, the outcome of
		// the run before it (unlockReceipt): "unlock failed" read as if the
		// unlock had failed (issue 52).
		return "unlocked (last run " + r.Status + ")"
	}
	switch r.Status {
	case receipt.StatusApplied, receipt.StatusUnchanged, receipt.StatusDestroyed:
		return r.Status
	}
	return r.Command + " " + r.Status
}

// VarArgs are the -var-file and -var of gc's destroys and drift's plans,
// files first.
func VarArgs(files, vars []string) ([]engine.VarArg, error) {
	var out []engine.VarArg
	for _, v := range files {
		out = append(out, engine.VarArg{File: true, Value: v})
	}
	for _, v := range vars {
		if !strings.Contains(v, "=") {
			return nil, errcode.New(errcode.Usage, "-var %q must be NAME=VALUE", v)
		}
		out = append(out, engine.VarArg{Value: v})
	}
	return out, nil
}
