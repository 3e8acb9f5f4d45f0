package cmdutil

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// WriteDiagnostics prints the engine's diagnostics as the engine does
// without colour: severity and summary, where, and the detail.
func WriteDiagnostics(w io.Writer, diags []tfjson.Diagnostic) {
	for _, d := range diags {
		sev := "Error"
		if d.Severity == tfjson.DiagnosticSeverityWarning {
			sev = "Warning"
		}
		fmt.Fprintf(w, "\n%s: %s\n", sev, d.Summary)
		if r := d.Range; r != nil {
			fmt.Fprintf(w, "\n  on %s line %d:\n", r.Filename, r.Start.Line)
			if s := d.Snippet; s != nil {
				fmt.Fprintf(w, "  %d: %s\n", s.StartLine, strings.TrimRight(s.Code, "\n"))
			}
		}
		if d.Detail != "" {
			fmt.Fprintf(w, "\n%s\n", d.Detail)
		}
		fmt.Fprintln(w)
	}
}

// AnnotateDiagnostics repeats the engine's diagnostics as GitHub Actions
// annotations (`::error file=F,line=L::...`) when GITHUB_ACTIONS=true, so
// they show on the pull request's files. They go to stderr: stdout may be
// the --json document, and the runner reads workflow commands from both.
func AnnotateDiagnostics(f *IO, dir string, diags []tfjson.Diagnostic) {
	if f.Getenv("GITHUB_ACTIONS") != "true" {
		return
	}
	for _, d := range diags {
		level := "error"
		if d.Severity == tfjson.DiagnosticSeverityWarning {
			level = "warning"
		}
		props := []string{"title=" + EscapeProperty(d.Summary)}
		if r := d.Range; r != nil && r.Filename != "" {
			props = append([]string{"file=" + EscapeProperty(workspacePath(f.Getenv, dir, r.Filename)), fmt.Sprintf("line=%d", r.Start.Line), fmt.Sprintf("col=%d", r.Start.Column)}, props...)
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		fmt.Fprintf(f.ErrOut, "::%s %s::%s\n", level, strings.Join(props, ","), EscapeData(msg))
	}
}

// annotate writes one of sponson's own errors or warnings as a GitHub
// Actions annotation when GITHUB_ACTIONS=true.
func annotate(f *IO, level, title, msg string) {
	if f == nil || f.Getenv == nil || f.Getenv("GITHUB_ACTIONS") != "true" {
		return
	}
	fmt.Fprintf(f.ErrOut, "::%s title=%s::%s\n", level, EscapeProperty(title), EscapeData(msg))
}

// workspacePath names a file of the configuration relative to the
// checkout (GITHUB_WORKSPACE), as annotations want it.
func workspacePath(getenv func(string) string, dir, name string) string {
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	if ws := getenv("GITHUB_WORKSPACE"); ws != "" {
		if rel, err := filepath.Rel(ws, p); err == nil && filepath.IsLocal(rel) {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(p)
}

// EscapeData and escapeProperty escape a workflow command's message and
// property values as the runner reads them.
func EscapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func EscapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// AnnotateOutcome repeats a command's warnings and error as GitHub Actions
// annotations (GITHUB_ACTIONS=true), so that they show on the run's summary
// page and not only in its log. Under plan -detailed-exitcode "changes
// present" is no error.
func AnnotateOutcome(f *IO, o Outcome) {
	for _, w := range o.Warnings {
		annotate(f, "warning", "sponson "+o.Command, w)
	}
	if o.Err == nil {
		return
	}
	e := errcode.As(o.Err)
	msg := e.Message
	if e.Hint != "" {
		msg += "\n" + e.Hint
	}
	annotate(f, "error", fmt.Sprintf("sponson %s: %s", o.Command, e.Code), msg)
}

// LogSections returns the Section function of a run in a CI job whose log
// folds: GitLab's collapsible sections (GitlabSections), GitHub's groups
// (GitHubGroups); nil elsewhere.
func LogSections(getenv func(string) string, now func() time.Time, w io.Writer) func(name, title string) func() {
	if s := GitlabSections(getenv, now, w); s != nil {
		return s
	}
	return GitHubGroups(getenv, w)
}

// GitHubGroups returns the Section function of a run in a GitHub Actions
// job (GITHUB_ACTIONS=true), nil elsewhere: the engine's init and plan
// output each become a foldable group of the log (::group:: and
// ::endgroup::, which do not nest). The apply stays unfolded: it is what a
// person watches while it runs.
func GitHubGroups(getenv func(string) string, w io.Writer) func(name, title string) func() {
	if getenv("GITHUB_ACTIONS") != "true" {
		return nil
	}
	return func(name, title string) func() {
		if name != "init" && name != "plan" {
			return func() {}
		}
		fmt.Fprintf(w, "::group::%s\n", EscapeData(title))
		return func() { fmt.Fprintln(w, "::endgroup::") }
	}
}

// GitlabSections returns the Section function of a run in a GitLab CI job
// (GITLAB_CI=true), nil elsewhere: each phase of the engine's output (init,
// plan, apply) becomes a collapsible section of the job's log. The markers
// are GitLab's: section_start and section_end with the Unix time and a
// name, each followed by a carriage return and an erase to the line's end
// so that a terminal shows nothing of them.
func GitlabSections(getenv func(string) string, now func() time.Time, w io.Writer) func(name, title string) func() {
	if getenv("GITLAB_CI") != "true" {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	return func(name, title string) func() {
		id := "sponson_" + name
		fmt.Fprintf(w, "\x1b[0Ksection_start:%d:%s[collapsed=true]\r\x1b[0K%s\n", now().Unix(), id, title)
		return func() { fmt.Fprintf(w, "\x1b[0Ksection_end:%d:%s\r\x1b[0K\n", now().Unix(), id) }
	}
}
