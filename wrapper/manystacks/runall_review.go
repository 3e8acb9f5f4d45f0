package manystacks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/comment"
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/internal/store"
	"github.com/sponson/terraform-provider-sponson/internal/summary"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/runner"
)

// The one review of a run of many stacks (docs/design.md §4.7): each stack
// writes its own summary to a file of the run's, and the run composes them
// into one summary, one step summary, one GitLab report and one sticky
// comment per pull request and environment (summary.Many). The stacks
// themselves publish nothing.

// reviewEnv blanks, for each stack's run, what would make it publish on
// its own.
var reviewEnv = []string{"GITHUB_STEP_SUMMARY=", "SPONSON_SUMMARY=", "SPONSON_COMMENT=", "SPONSON_GITLAB_REPORT="}

// StackSummaryFile is where the stack in dir writes its summary in the
// run's directory tmp.
func StackSummaryFile(tmp, dir string) string {
	return filepath.Join(tmp, "summary-"+store.StackSegment(dir)+".md")
}

// publishMany composes the review of the stacks' results and writes it
// where review asks; each failure is a warning.
func publishMany(ctx context.Context, f *cmdutil.IO, hc *http.Client, review *cmdutil.ReviewFlags, command scoperun.Command, selection, tmp string, results []StackRunResult) []string {
	if !review.Wanted(f.Getenv) {
		return nil
	}
	m := summary.Many{Command: string(command), Selection: selection}
	var changes []summary.Change
	pr := 0
	for _, r := range results {
		s := summary.ManyStack{Directory: r.Directory, Stack: r.Stack, Status: string(r.Status), Because: r.Because}
		if b, err := os.ReadFile(StackSummaryFile(tmp, r.Directory)); err == nil {
			s.Markdown = string(b)
		}
		var rr runner.RunResult
		if r.Result != nil && json.Unmarshal(r.Result, &rr) == nil {
			if m.Environment == "" {
				m.Environment, m.Scope = rr.Environment, rr.Scope
			}
			if pr == 0 {
				pr = rr.Context.PullRequest
			}
			changes = append(changes, rr.Changes...)
			s.Changes = !rr.Summary.Empty()
			s.Outcome = rr.Summary.String()
			if rr.Summary.Empty() {
				s.Outcome = "no changes"
			}
		}
		if r.Error != nil {
			first, _, _ := strings.Cut(r.Error.Message, "\n")
			s.Outcome = string(r.Error.Code) + ": " + first
		}
		if r.Moved != nil && r.Error == nil {
			// A renamed stack's state moves: nothing is destroyed.
			s.Outcome = r.Moved.Outcome()
		} else if r.Removed && len(r.Reasons) > 0 {
			// A removed stack's run is the destroy (or its plan) of what
			// it holds, from the base's configuration: the review says so.
			s.Outcome = r.Reasons[0] + "; destroy, from the base's configuration: " + s.Outcome
		}
		s.Needs = r.Needs
		m.Stacks = append(m.Stacks, s)
	}
	var warns []string
	warn := func(format string, args ...any) { warns = append(warns, fmt.Sprintf(format, args...)) }
	warns = append(warns, runner.WriteSummaries(f.Getenv, review.Summary, summary.Options{Limit: runner.StepSummaryLimit, FullPlanAt: "the job's log"}, m.Markdown)...)
	if review.GitLabReport != "" {
		if err := runner.WriteFile(review.GitLabReport, summary.GitLabReport(changes)); err != nil {
			warn("could not write the GitLab report to %s: %v", review.GitLabReport, err)
		}
	}
	if review.Comment {
		host, err := comment.FromEnv(comment.Env{Getenv: f.Getenv, PullRequest: pr, HTTP: hc})
		if err != nil {
			warn("--comment: %v; no comment posted", err)
			return warns
		}
		md := m.Markdown(summary.Options{Marker: true, Limit: host.Limit(), FullPlanAt: host.FullPlanAt()})
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), runner.CommentTimeout)
		defer cancel()
		out, err := comment.Sticky(cctx, host, summary.ManyMarker(m.Command, m.Environment), md)
		if err != nil {
			warn("could not post the summary comment on %s: %v; the run's outcome is unchanged", host.Name(), err)
		} else {
			fmt.Fprintf(f.ErrOut, "summary comment %s on %s\n", out, host.Name())
		}
	}
	return warns
}
