package stackpipeline_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/stackgraph"
	"github.com/sponson/terraform-provider-sponson/internal/stackpipeline"
)

const template = `# one stack's job
variables:
  SPONSON_STORE: git
.sponson-stack:
  image: debian
  script:
    - sponson apply --wait --json
`

// jobsOf decodes the jobs of a pipeline (every key but the globals).
func jobsOf(t *testing.T, out []byte) map[string]job {
	t.Helper()
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	jobs := map[string]job{}
	for k, n := range doc {
		if k == "stages" || k == "variables" {
			continue
		}
		var j job
		if err := n.Decode(&j); err != nil {
			t.Fatalf("job %s: %v\n%s", k, err, out)
		}
		jobs[k] = j
	}
	return jobs
}

type job struct {
	Extends   string            `yaml:"extends"`
	Stage     string            `yaml:"stage"`
	Variables map[string]string `yaml:"variables"`
	Script    []string          `yaml:"script"`
}

// The child pipeline has the template, a stage per depth in order, and a
// job per stack in its depth's stage with its directory.
func TestGitLab(t *testing.T) {
	t.Parallel()
	stacks := []*stackgraph.Stack{
		{Directory: "stacks/docs", Depth: 0}, {Directory: "stacks/network", Depth: 0}, {Directory: "stacks/app", Depth: 1},
	}
	out, err := stackpipeline.GitLab([]byte(template), stacks, "3 stacks changed since main")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Stages    []string          `yaml:"stages"`
		Variables map[string]string `yaml:"variables"`
	}
	if err := yaml.Unmarshal(out, &p); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if d := cmp.Diff([]string{"depth-0", "depth-1"}, p.Stages); d != "" {
		t.Errorf("stages (-want +got):\n%s", d)
	}
	if p.Variables["SPONSON_STORE"] != "git" {
		t.Errorf("the template's variables are lost:\n%s", out)
	}
	jobs := jobsOf(t, out)
	want := map[string]job{
		"stack stacks/docs":    {Extends: ".sponson-stack", Stage: "depth-0", Variables: map[string]string{"SPONSON_CHDIR": "stacks/docs"}},
		"stack stacks/network": {Extends: ".sponson-stack", Stage: "depth-0", Variables: map[string]string{"SPONSON_CHDIR": "stacks/network"}},
		"stack stacks/app":     {Extends: ".sponson-stack", Stage: "depth-1", Variables: map[string]string{"SPONSON_CHDIR": "stacks/app"}},
	}
	delete(jobs, ".sponson-stack")
	if d := cmp.Diff(want, jobs); d != "" {
		t.Errorf("jobs (-want +got):\n%s", d)
	}
	if !strings.Contains(string(out), "3 stacks changed since main") {
		t.Errorf("the pipeline does not say why:\n%s", out)
	}
}

// Without stacks the pipeline has one job saying so: GitLab refuses an
// empty pipeline.
func TestGitLabNothing(t *testing.T) {
	t.Parallel()
	out, err := stackpipeline.GitLab([]byte(template), nil, "no stack changed since main")
	if err != nil {
		t.Fatal(err)
	}
	jobs := jobsOf(t, out)
	if j := jobs["no stack"]; j.Stage != "depth-0" || len(j.Script) != 1 || !strings.Contains(j.Script[0], "no stack changed since main") {
		t.Errorf("the empty pipeline's job = %+v\n%s", j, out)
	}
}

// A template must define the hidden job and leave stages and visible jobs
// to the pipeline.
func TestGitLabTemplateRefused(t *testing.T) {
	t.Parallel()
	for name, tpl := range map[string]string{
		"no job":      "variables: {}\n",
		"stages":      template + "stages: [x]\n",
		"visible job": template + "other:\n  script: [x]\n",
		"not yaml":    "a: [\n",
	} {
		_, err := stackpipeline.GitLab([]byte(tpl), nil, "")
		if err == nil || errcode.As(err).Code != errcode.Usage {
			t.Errorf("%s: err = %v, want USAGE", name, err)
		}
	}
}
