package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/github"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
	"github.com/sponson/terraform-provider-sponson/internal/summary"
)

// preview is what an apply leaves for reviewers: the scope's outputs and
// the one the configuration names as the preview's address
// (--preview-url-output).
type preview struct {
	outputs []summary.Output
	url     string
}

// previewOf reads the scope's outputs after a successful apply, from the
// state the apply wrote (the store, no engine), and picks the preview's
// address. Every problem is a warning: the apply succeeded.
func previewOf(ctx context.Context, in *RunInput, res *scoperun.Result, runErr error, warn func(string, ...any)) preview {
	var pv preview
	if runErr != nil || in.Opts.Command != scoperun.Apply || in.Opts.Store == nil {
		return pv
	}
	data, err := in.Opts.Store.ReadState(ctx, res.Key)
	if err != nil {
		warn("could not read the outputs of %s for the summary: %v", res.Key, err)
		return pv
	}
	outs, err := StateOutputs(data)
	if err != nil {
		warn("could not read the outputs of %s for the summary: %v", res.Key, err)
		return pv
	}
	names := make([]string, 0, len(outs))
	for n := range outs {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return summary.NaturalLess(names[i], names[j]) })
	secrets := summary.Secrets(res.Plan)
	for _, n := range names {
		o := outs[n]
		so := summary.Output{Name: n, Sensitive: o.Sensitive}
		if !o.Sensitive {
			so.Value = outputText(o.Value)
			// An output the engine does not mark sensitive can still copy a
			// value the plan marks so (docs/design.md §4.3).
			for _, s := range secrets {
				if strings.Contains(so.Value, s) {
					so.Value, so.Sensitive = "", true
					break
				}
			}
		}
		pv.outputs = append(pv.outputs, so)
	}
	name, from := previewOutputName(in, res)
	if name == "" {
		return pv
	}
	o, ok := outs[name]
	switch {
	case !ok:
		warn("%s %s: scope %s has no such output; no preview address", from, name, res.Key)
	case o.Sensitive:
		warn("%s %s: the output is sensitive; a preview's address is shown to everyone, so it is not used", from, name)
	default:
		var s string
		if json.Unmarshal(o.Value, &s) != nil {
			warn("%s %s: the output is not a string; no preview address", from, name)
			break
		}
		if u, err := url.Parse(s); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			warn("%s %s: %q is not an http(s) URL; no preview address", from, name, s)
			break
		}
		pv.url = s
	}
	return pv
}

// previewOutputName is the output that holds the preview's address:
// --preview-url-output, else the url_output of the configuration's
// sponson_scope (read from the plan, as the rest of its policy), and what
// named it, for warnings.
func previewOutputName(in *RunInput, res *scoperun.Result) (string, string) {
	if name := strings.TrimSpace(in.Review.PreviewURLOutput); name != "" {
		return name, "--preview-url-output"
	}
	if res == nil || res.Plan == nil {
		return "", ""
	}
	for _, rc := range res.Plan.ResourceChanges {
		if rc == nil || rc.Change == nil || rc.Type != "sponson_scope" || rc.Mode != tfjson.ManagedResourceMode {
			continue
		}
		// A destroy plans the scope away: its url_output is the one before.
		for _, v := range []any{rc.Change.After, rc.Change.Before} {
			if m, ok := v.(map[string]any); ok {
				if name, ok := m["url_output"].(string); ok && strings.TrimSpace(name) != "" {
					return strings.TrimSpace(name), "the url_output of " + rc.Address
				}
			}
		}
	}
	return "", ""
}

// outputText is a string output's text, or any other value's compact JSON.
func outputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return b.String()
	}
	return string(raw)
}

// publishPreview hands the preview's address to the code host: a GitHub
// deployment of environment ENV/SCOPE with that environment_url (the pull
// request's "View deployment" button), marked inactive by the scope's
// destroy, and on GitLab a dotenv report (--gitlab-dotenv) whose
// SPONSON_URL the job's environment:url reads. It returns warnings.
func publishPreview(ctx context.Context, in *RunInput, res *scoperun.Result, runErr error, pv preview) []string {
	var warns []string
	rf := in.Review
	if rf.GitLabDotenv != "" && pv.url != "" {
		if strings.ContainsAny(pv.url, "\n\r") {
			warns = append(warns, "the preview's address holds a line break; not written to "+rf.GitLabDotenv)
		} else if err := WriteFile(rf.GitLabDotenv, []byte("SPONSON_URL="+pv.url+"\n")); err != nil {
			warns = append(warns, fmt.Sprintf("could not write the dotenv report %s: %v", rf.GitLabDotenv, err))
		}
	}
	if name, _ := previewOutputName(in, res); name == "" || runErr != nil {
		return warns
	}
	repo := strings.TrimSpace(in.IO.Getenv("GITHUB_REPOSITORY"))
	if in.IO.Getenv("GITHUB_ACTIONS") != "true" || repo == "" {
		return warns
	}
	env := res.Key.Environment + "/" + res.Key.Scope
	token := strings.TrimSpace(in.IO.Getenv("GITHUB_TOKEN"))
	if token == "" {
		return append(warns, "no GitHub deployment of "+env+": set GITHUB_TOKEN (with deployments: write)")
	}
	c := &github.Client{BaseURL: in.IO.Getenv("GITHUB_API_URL"), Token: token, HTTP: in.HTTP}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CommentTimeout)
	defer cancel()
	switch in.Opts.Command {
	case scoperun.Apply:
		if pv.url == "" {
			return warns
		}
		ref := firstNonEmpty(in.Opts.Context.Commit, in.IO.Getenv("GITHUB_SHA"))
		if ref == "" {
			return append(warns, "no GitHub deployment of "+env+": the run has no commit to record it at (--commit)")
		}
		id, err := c.CreateDeployment(ctx, repo, github.Deployment{
			Ref: ref, Environment: env, Description: "sponson apply " + res.RunID,
			Transient: res.Key.Scope != "main", Production: in.Opts.Protected,
		})
		if err == nil {
			err = c.CreateDeploymentStatus(ctx, repo, id, github.DeploymentStatus{
				State: "success", EnvironmentURL: pv.url, LogURL: runctx.DetectJob(in.IO.Getenv).URL, AutoInactive: true,
				Description: "applied by " + res.RunID,
			})
		}
		if err != nil {
			return append(warns, fmt.Sprintf("could not record the GitHub deployment of %s: %v; the run's outcome is unchanged", env, err))
		}
		fmt.Fprintf(in.IO.ErrOut, "GitHub deployment %d of %s: %s\n", id, env, pv.url)
	case scoperun.Destroy:
		ids, err := c.Deployments(ctx, repo, env)
		for _, id := range ids {
			if err != nil {
				break
			}
			err = c.CreateDeploymentStatus(ctx, repo, id, github.DeploymentStatus{State: "inactive", Description: "destroyed by " + res.RunID})
		}
		if err != nil {
			return append(warns, fmt.Sprintf("could not mark the GitHub deployments of %s inactive: %v; the run's outcome is unchanged", env, err))
		}
		if len(ids) > 0 {
			fmt.Fprintf(in.IO.ErrOut, "GitHub deployments of %s marked inactive: %d\n", env, len(ids))
		}
	}
	return warns
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}
