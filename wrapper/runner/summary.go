package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/comment"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/internal/stackoutputs"
	"github.com/sponson/terraform-provider-sponson/internal/summary"
)

// StepSummaryLimit is what GitHub Actions takes from one step's
// $GITHUB_STEP_SUMMARY (1 MiB).
const StepSummaryLimit = 1 << 20

// CommentTimeout bounds the whole comment exchange: a slow host delays the
// end of a run by at most this much.
const CommentTimeout = time.Minute

// summaryOf builds what a run's summary shows from its result and error.
func summaryOf(in *RunInput, res *scoperun.Result, runErr error) summary.Run {
	c := in.Opts.Context
	s := summary.Run{
		Command: string(in.Opts.Command), Environment: res.Key.Environment, Scope: res.Key.Scope,
		Stack: in.stack, Commit: c.Commit, RunID: res.RunID, Status: res.Status,
		Changes:  summary.ChangesFromPlan(res.Plan),
		PlanText: res.PlanText, Warnings: res.Warnings, InheritedFrom: res.InheritedFrom,
		ApprovalNeeded: res.NeedsApproval, ApprovedBy: res.ApprovedBy,
		SavedPlan: in.savedPlanOut,
	}
	if p := in.rules.Proposed; p != nil {
		s.RulesFrom, s.RuleChanges = in.rules.Origin.Why, p.Changes
	}
	s.Policies, s.ProposedPolicies = policyVerdicts(res.Policies)
	if sp := in.Opts.Saved; sp != nil {
		s.AppliesPlan = fmt.Sprintf("%s (made by %s at %s)", in.appliesPlan, sp.Meta.RunID, sp.Meta.CreatedAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	if res.Engine.Name != "" {
		s.Engine = res.Engine.Name + " " + res.Engine.Version
	}
	for _, read := range shownReads(res.Plan) {
		if len(read.Provisional) > 0 {
			s.Provisional = append(s.Provisional, summary.ProvisionalRead{Stack: read.Stack, Outputs: read.Provisional})
		}
	}
	if derived := stackoutputs.ProvisionalObjects(res.Plan); derived != nil {
		for i := range s.Changes {
			s.Changes[i].Provisional = derived(s.Changes[i].Address)
		}
	}
	if rec := res.Receipt; rec != nil {
		s.ApprovedBy = rec.ApprovedBy
		for _, e := range rec.Ledger {
			if e.CreatedBy == receipt.CreatedByInherited {
				s.Inherited = append(s.Inherited, e.Address)
			}
		}
		if s.ApprovedBy != "" {
			s.ApprovalNeeded = true
		}
	}
	for _, l := range res.LeaseWaits {
		s.LeaseWaits = append(s.LeaseWaits, summary.LeaseWait{Holder: l.Holder, Until: l.ExpiresAt})
	}
	if runErr != nil {
		e := errcode.As(runErr)
		s.Failure = &summary.Failure{Code: string(e.Code), Message: e.Message, Hint: e.Hint}
		switch e.Code {
		case errcode.OwnedByOtherScope:
			if cs, ok := e.Details["conflicts"].([]map[string]string); ok {
				for _, c := range cs {
					s.Refusals = append(s.Refusals, summary.Refusal{Address: c["address"], Owner: c["owner"], OwnerRun: c["ownerRun"]})
				}
			}
		case errcode.EnvNotApproved:
			s.ApprovalNeeded, s.ApprovedBy = true, ""
		}
	}
	return s
}

// publish writes the summary everywhere it was asked for. Each failure is a
// warning: a summary never changes the outcome of the run it describes.
func publish(ctx context.Context, in *RunInput, res *scoperun.Result, runErr error) []string {
	rf := in.Review
	if res == nil {
		return nil
	}
	var warns []string
	warn := func(format string, args ...any) { warns = append(warns, fmt.Sprintf(format, args...)) }
	var pv preview
	if name, _ := previewOutputName(in, res); rf.Wanted(in.IO.Getenv) || name != "" || rf.GitLabDotenv != "" {
		pv = previewOf(ctx, in, res, runErr, warn)
	}
	warns = append(warns, publishPreview(ctx, in, res, runErr, pv)...)
	if !rf.Wanted(in.IO.Getenv) {
		return warns
	}
	s := summaryOf(in, res, runErr)
	s.JobURL = runctx.DetectJob(in.IO.Getenv).URL
	s.Outputs, s.PreviewURL = pv.outputs, pv.url

	warns = append(warns, WriteSummaries(in.IO.Getenv, rf.Summary, summary.Options{Limit: StepSummaryLimit, FullPlanAt: "the job's log"}, s.Markdown)...)
	if rf.GitLabReport != "" {
		if res.Plan == nil {
			warn("no plan to report in %s: the run stopped before it had one", rf.GitLabReport)
		} else if err := WriteFile(rf.GitLabReport, summary.GitLabReport(s.Changes)); err != nil {
			warn("could not write the GitLab report to %s: %v", rf.GitLabReport, err)
		}
	}
	if rf.Comment {
		if w := postComment(ctx, in, s); w != "" {
			warns = append(warns, w)
		}
	}
	return warns
}

// postComment posts or updates the sticky comment; it returns a warning,
// or "" when the comment is in place.
func postComment(ctx context.Context, in *RunInput, s summary.Run) string {
	host, err := comment.FromEnv(comment.Env{Getenv: in.IO.Getenv, PullRequest: in.Opts.Context.PullRequest, HTTP: in.HTTP})
	if err != nil {
		// Without a token (or outside a pull request) the run goes on:
		// the comment is a courtesy.
		return "--comment: " + err.Error() + "; no comment posted"
	}
	md := s.Markdown(summary.Options{Marker: true, Limit: host.Limit(), FullPlanAt: host.FullPlanAt()})
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CommentTimeout)
	defer cancel()
	out, err := comment.Sticky(ctx, host, summary.CommandMarker(s.Command, s.Stack, s.Environment), md)
	if err != nil {
		return fmt.Sprintf("could not post the summary comment on %s: %v; the run's outcome is unchanged", host.Name(), err)
	}
	fmt.Fprintf(in.IO.ErrOut, "summary comment %s on %s\n", out, host.Name())
	return ""
}

// WriteSummaries writes a summary where summaries go: appended to
// $GITHUB_STEP_SUMMARY, rendered with the step's options, when that is set,
// and into file (--summary) in full when one is named. It returns a warning
// for each one it could not write.
func WriteSummaries(getenv func(string) string, file string, step summary.Options, markdown func(summary.Options) string) []string {
	var warns []string
	if p := getenv("GITHUB_STEP_SUMMARY"); p != "" {
		if err := appendFile(p, markdown(step)+"\n"); err != nil {
			warns = append(warns, fmt.Sprintf("could not write the summary to $GITHUB_STEP_SUMMARY: %v", err))
		}
	}
	if file != "" {
		if err := WriteFile(file, []byte(markdown(summary.Options{}))); err != nil {
			warns = append(warns, fmt.Sprintf("could not write the summary to %s: %v", file, err))
		}
	}
	return warns
}

func appendFile(path, text string) error {
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fh.WriteString(text); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

// WriteFile writes a file named relative to the working directory.
func WriteFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// shownReads are the plan's reads of other stacks' outputs as the run's
// line, document and review show them: of the outputs known only after
// their stack's apply, those the configuration reads (an output nobody
// reads is not marked provisional, issue 49; stackoutputs.ReadOutputs).
func shownReads(p *tfjson.Plan) []receipt.StackRead {
	reads := scoperun.StackReads(p)
	for i := range reads {
		if len(reads[i].Provisional) > 0 {
			reads[i].Provisional = stackoutputs.ReadOutputs(p, reads[i].Address, reads[i].Provisional)
		}
	}
	return reads
}
