// Package stackpipeline writes the CI pipeline that spreads a set of stacks
// over a CI system's own runners in dependency layers (docs/design.md §4.7
// "Many stacks"): a GitLab child pipeline with a stage per depth and a job
// per stack. (A GitHub Actions workflow needs no file written: its layers
// take `sponson stacks --json`'s result.layers as their matrices.)
package stackpipeline

import (
	"bytes"
	"fmt"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/stackgraph"
)

// StackJob is the hidden job of the template that every stack's job
// extends.
const StackJob = ".sponson-stack"

// Stage is the name of the stage of the stacks of depth d.
func Stage(d int) string { return "depth-" + strconv.Itoa(d) }

// Job is the name of the job of the stack in dir.
func Job(dir string) string { return "stack " + dir }

// GitLab is the child pipeline of stacks: the template (a GitLab CI file
// defining the hidden job StackJob, and whatever else the child pipeline
// needs: default, variables, workflow), then a stage per depth and, for
// each stack, a job that extends StackJob in its depth's stage with
// SPONSON_CHDIR set to the stack's directory. The stages run one after the
// other, so a stack's job starts once every stack of the depths before it
// succeeded; the jobs of one stage run at the same time. Without stacks
// the pipeline holds one job saying so (GitLab refuses a pipeline without
// jobs). The template must not declare stages, nor jobs that are not
// hidden: the stages are the depths.
func GitLab(template []byte, stacks []*stackgraph.Stack, why string) ([]byte, error) {
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(template, &doc); err != nil {
		return nil, errcode.Wrap(errcode.Usage, err, "the GitLab template is not YAML")
	}
	if _, ok := doc[StackJob]; !ok {
		return nil, errcode.New(errcode.Usage, "the GitLab template defines no job %s, which every stack's job extends", StackJob).
			WithHint("Define the hidden job " + StackJob + " in the template: the image, the install step and the sponson line of one stack.")
	}
	if _, ok := doc["stages"]; ok {
		return nil, errcode.New(errcode.Usage, "the GitLab template declares stages; the child pipeline's stages are the depths of the stacks").
			WithHint("Remove stages from the template.")
	}
	for k := range doc {
		if k != "" && k[0] != '.' && !globalKeywords[k] {
			return nil, errcode.New(errcode.Usage, "the GitLab template has a job %q that is not hidden; the child pipeline's jobs are the stacks'", k).
				WithHint("Name it ." + k + " (a hidden job) or move it to the parent pipeline.")
		}
	}
	var b bytes.Buffer
	b.Write(bytes.TrimRight(template, "\n"))
	b.WriteString("\n\n# Written by sponson stacks --gitlab-pipeline: " + why + ".\n")
	b.WriteString("# A stage per depth; a job per stack, extending " + StackJob + ".\n")
	deepest := -1
	for _, s := range stacks {
		deepest = max(deepest, s.Depth)
	}
	b.WriteString("stages:\n")
	for d := 0; d <= max(deepest, 0); d++ {
		fmt.Fprintf(&b, "  - %s\n", Stage(d))
	}
	if len(stacks) == 0 {
		fmt.Fprintf(&b, "\n%s:\n  stage: %s\n  script:\n    - %s\n", quote("no stack"), Stage(0), quote("echo "+quoteShell("no stack to run: "+why)))
		return b.Bytes(), nil
	}
	for _, s := range stacks {
		fmt.Fprintf(&b, "\n%s:\n  extends: %s\n  stage: %s\n  variables:\n    SPONSON_CHDIR: %s\n", quote(Job(s.Directory)), StackJob, Stage(s.Depth), quote(s.Directory))
	}
	return b.Bytes(), nil
}

// globalKeywords are the top-level keys of a GitLab CI file that are not
// jobs.
var globalKeywords = map[string]bool{
	"default": true, "include": true, "variables": true, "workflow": true, "spec": true,
	"image": true, "services": true, "cache": true, "before_script": true, "after_script": true,
}

// quote is s as a YAML double-quoted scalar (JSON's escapes are YAML's).
func quote(s string) string { return strconv.Quote(s) }

// quoteShell is s as one single-quoted shell word.
func quoteShell(s string) string {
	out := "'"
	for _, r := range s {
		if r == '\'' {
			out += `'\''`
			continue
		}
		out += string(r)
	}
	return out + "'"
}
