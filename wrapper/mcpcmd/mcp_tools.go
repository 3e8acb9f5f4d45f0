package mcpcmd

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/wrapper/manystacks"
)

// The tools of `sponson mcp` and their parameters. Each tool is one CLI
// command run with --json, and each parameter one of its flags, so a tool
// call is a command line (docs/design.md §4.6). TestMCPToolsMirrorFlags
// fails when a flag of a command has no parameter and is not withheld, or a
// parameter names a flag the command does not have.

// paramKind is the JSON type of a tool parameter and how it becomes
// arguments.
type paramKind int

const (
	kindString   paramKind = iota // --flag=VALUE
	kindBool                      // --flag=true|false
	kindDuration                  // a Go duration string, --flag=VALUE
	kindInt                       // a whole number, --flag=N
	kindStrings                   // an array of strings: the flag repeated
	kindVars                      // an object of strings: the flag repeated with NAME=VALUE
)

// toolParam is one parameter of a tool.
type toolParam struct {
	Name string
	kind paramKind
	desc string
	// flag is the CLI flag the parameter sets (sponson's --flag, or with
	// engine the engine's own -flag); empty with positional.
	Flag   string
	Engine bool
	// positional parameters are the command's arguments.
	Positional bool
}

// ToolSpec is one tool: the command it runs and what it takes.
type ToolSpec struct {
	Name    string
	Command string
	desc    string
	Params  []toolParam
	// withheld are the command's flags no tool call may set, each with the
	// reason: sponson's flags by name (the person who starts the server sets
	// them, see NewCmdMCP), the engine's flags with their dash ("-chdir").
	Withheld map[string]string
	// guarded: the tool runs the engine with the environment's
	// credentials or reads its state (outputs can be secrets), so a
	// protected environment needs the server's --allow-production.
	guarded bool
	// readOnly tools change nothing anywhere.
	readOnly bool
	// confirm: the call must name the scope it acts on (destroy).
	confirm bool
}

// Reasons for the flags no tool call may set.
const (
	whyApprover    = "an agent never approves its own run: the approver is the server's --approved-by (or SPONSON_APPROVED_BY in its environment), set by the person who started it"
	whyEngine      = "the engine binary is the server's --engine (or SPONSON_ENGINE), chosen by the person who started it"
	whyOlderCommit = "rolling a scope back is a person's decision on one run, never a tool call"

	whyEngineChdir = "the directory parameter is the configuration directory (--chdir)"
	whyNoOp        = "accepted by the CLI only so that a CI line runs unchanged; it changes nothing under sponson"
	whyCompact     = "it only changes how the engine's log prints warnings; the tool result carries the log's tail"
	whyExitcode    = "the envelope's result says whether the plan has changes; exit code 2 would make ok false for a plan that succeeded"
	whyPlanNoLease = "plan takes no lease, and the CLI ignores -lock-timeout on plan"
)

// engineWithheld are the engine flags of every run tool that no tool call
// sets, with the reason; TestMCPToolsMirrorFlags holds the tools to
// engineflag's table, so a flag the CLI starts to accept is a parameter or
// is withheld here.
func engineWithheld(command string) map[string]string {
	w := map[string]string{"-chdir": whyEngineChdir, "-no-color": whyNoOp, "-input": whyNoOp, "-lock": whyNoOp, "-compact-warnings": whyCompact}
	switch command {
	case "plan":
		w["-detailed-exitcode"] = whyExitcode
		w["-lock-timeout"] = whyPlanNoLease
		w["-destroy"] = whyPlanDestroy
	default:
		w["-auto-approve"] = whyNoOp
	}
	return w
}

// whyPlanDestroy withholds plan -destroy: the review of a destroy is that
// of a stack a change removed, in a run of many stacks.
const whyPlanDestroy = "the plan of a destroy reviews a stack a change removed, in a run of many stacks (plan --changed); a tool call plans its scope's configuration, and the destroy tool destroys"

var (
	pStk = toolParam{Name: "stack", Flag: "stack", desc: "Stack name: one root module of one repository (default: the sponson_scope stack attribute, else the repository and the configuration's directory in it)."}
	pEnv = toolParam{Name: "environment", Flag: "env", desc: "Environment to run in, one sponson.hcl declares (default \"preview\"; never inferred from the branch). A protected environment such as production is refused unless the server was started with --allow-production."}
	pDir = toolParam{Name: "directory", Flag: "chdir", desc: "Configuration directory (default: the server's working directory)."}
	pSt  = toolParam{Name: "store", Flag: "store", desc: "Store URL: file://DIR, git, git+URL, postgres://..., s3://BUCKET/PREFIX, gs://BUCKET/PREFIX or azblob://ACCOUNT/CONTAINER/PREFIX (default: .sponson/ in the configuration directory)."}
	pSc  = toolParam{Name: "scope", Flag: "scope", desc: "Scope name, overriding detection (a local branch gives branch-<name>)."}
	pPR  = toolParam{Name: "pull_request", Flag: "pr", desc: "Pull request number; the scope becomes pr-<n>."}
	pBr  = toolParam{Name: "branch", Flag: "branch", desc: "Branch name; the scope becomes main or branch-<name>."}
	pCo  = toolParam{Name: "commit", Flag: "commit", desc: "Commit recorded in the receipt (default: HEAD of the directory's repository)."}

	pVarsEngine = toolParam{Name: "variables", kind: kindVars, Flag: "-var", Engine: true, desc: "Input variables, NAME to VALUE, passed to the engine as -var NAME=VALUE."}
	pVarFiles   = toolParam{Name: "var_files", kind: kindStrings, Flag: "-var-file", Engine: true, desc: "Variable files passed to the engine as -var-file."}
	pTargets    = toolParam{Name: "targets", kind: kindStrings, Flag: "-target", Engine: true, desc: "Resource addresses the run is limited to (-target)."}
	pReplace    = toolParam{Name: "replace", kind: kindStrings, Flag: "-replace", Engine: true, desc: "Resource instance addresses to replace (-replace): destroyed and created again even when unchanged."}
	pExclude    = toolParam{Name: "exclude", kind: kindStrings, Flag: "-exclude", Engine: true, desc: "Resource addresses the run leaves out (-exclude; OpenTofu only, refused with USAGE on Terraform)."}
	pRefreshO   = toolParam{Name: "refresh_only", kind: kindBool, Flag: "-refresh-only", Engine: true, desc: "Only update the state to match the real objects (-refresh-only); the scope's ledger follows the state."}
	pRefresh    = toolParam{Name: "refresh", kind: kindBool, Flag: "-refresh", Engine: true, desc: "false skips reading the real objects before planning (-refresh=false)."}
	pParallel   = toolParam{Name: "parallelism", kind: kindInt, Flag: "-parallelism", Engine: true, desc: "Limit on the engine's concurrent operations (-parallelism=N, at least 1)."}
	pLockTO     = toolParam{Name: "lock_timeout", kind: kindDuration, Flag: "-lock-timeout", Engine: true, desc: "Wait up to this long for the scope's lease (-lock-timeout, a Go duration; the same as wait with wait_timeout, and refused together with them; 0s does not wait)."}
	pOut        = toolParam{Name: "out", Flag: "-out", Engine: true, desc: "Save the plan to this file (-out FILE; mode 0600, it holds the engine's plan, sensitive values included), for the apply tool's plan_file. A relative path is from the server's working directory."}
	pJSONPlan   = toolParam{Name: "json_plan", Flag: "json-plan", desc: "Write the engine's plan JSON to this file (--json-plan FILE; mode 0600, it holds the plan's values), for policy tools. A relative path is from the server's working directory."}
	pPlanFile   = toolParam{Name: "plan_file", Positional: true, desc: "Apply exactly this saved plan of the plan tool's out (sponson apply FILE), or be refused when it went stale (PLAN_STALE). Give the same scope; variables and engine flags cannot change a saved plan and the CLI refuses them with it (USAGE)."}

	pWait  = toolParam{Name: "wait", kind: kindBool, Flag: "wait", desc: "Wait for the scope's lease when another run holds it (progress notifications say who holds it and until when); without it a held lease is LOCK_HELD."}
	pWaitT = toolParam{Name: "wait_timeout", kind: kindDuration, Flag: "wait-timeout", desc: "How long wait waits before WAIT_TIMEOUT, a Go duration such as 10m."}
	pTTL   = toolParam{Name: "lease_ttl", kind: kindDuration, Flag: "lease-ttl", desc: "Lease TTL, a Go duration; renewed every TTL/3."}

	pSummary = toolParam{Name: "summary", Flag: "summary", desc: "Write the run's Markdown summary to this file."}
	pComment = toolParam{Name: "comment", kind: kindBool, Flag: "comment", desc: "Post the summary as the pull request's sticky comment (needs the host's token in the server's environment)."}
	pGitLab  = toolParam{Name: "gitlab_report", Flag: "gitlab-report", desc: "Write GitLab's terraform report JSON to this file."}
)

// runToolParams are the parameters of the run tool of command: the engine
// flags are those engineflag accepts on it.
func runToolParams(command string) []toolParam {
	ps := []toolParam{pStk, pEnv, pSc, pPR, pBr, pCo, pDir, pSt, pVarsEngine, pVarFiles, pTargets, pExclude, pRefresh, pParallel, pSummary, pComment, pGitLab}
	if command != "destroy" {
		ps = append(ps, pReplace, pRefreshO)
	}
	switch command {
	case "plan":
		ps = append(ps, pOut, pJSONPlan)
	case "apply":
		ps = append(ps, pPlanFile)
	}
	if command != "plan" {
		ps = append(ps, pWait, pWaitT, pTTL, pLockTO)
	}
	return ps
}

// whyOneStack withholds --all, --changed, --base and --parallelism.
const whyOneStack = "a tool call runs one stack and returns its plan; run several by calling the tool once per stack, in the order of `sponson stacks --json`"

// withheldRun are the withheld flags of the run tool of command.
func withheldRun(command string, own map[string]string) map[string]string {
	w := engineWithheld(command)
	// A tool call runs one stack: an agent runs several by calling the
	// tool per stack, in the order `sponson stacks` gives.
	for _, k := range manystacks.SelectionFlags {
		if k == "base" || k == "changed" {
			if command == "destroy" {
				continue
			}
		}
		w[k] = whyOneStack
	}
	// What only a CI job has: the event whose checkout is checked, the
	// code host's deployments and GitLab's dotenv report.
	w["strict-checkout"] = whyCIOnly
	w["preview-url-output"] = whyCIOnly
	w["gitlab-dotenv"] = whyCIOnly
	for k, v := range own {
		w[k] = v
	}
	return w
}

// whyCIOnly withholds the flags of CI jobs: an agent's run has no CI event,
// deployment or job report.
const whyCIOnly = "it concerns a CI job (its event's checkout, the code host's deployments, GitLab's job reports), which a tool call is not"

// MCPTools is the tool table of `sponson mcp`.
var MCPTools = []ToolSpec{
	{Name: "plan", Command: "plan", guarded: true, readOnly: true, Params: runToolParams("plan"),
		Withheld: withheldRun("plan", map[string]string{"engine": whyEngine}),
		desc:     "Plan this branch's scope (sponson plan --json): what apply would change, refused early when it would change a resource another scope owns. Takes no lease and writes nothing."},
	{Name: "apply", Command: "apply", guarded: true, Params: runToolParams("apply"),
		Withheld: withheldRun("apply", map[string]string{"engine": whyEngine, "approved-by": whyApprover, "allow-older-commit": whyOlderCommit}),
		desc:     "Apply in this branch's scope (sponson apply --json) under the scope's lease; the receipt records the run. A local branch gives scope branch-<name>, which its pull request later takes over. Never approves itself: protected environments need the approver the server was started with."},
	{Name: "destroy", Command: "destroy", guarded: true, confirm: true,
		Params:   append(runToolParams("destroy"), toolParam{Name: "confirm", desc: "The name of the scope to destroy (for example branch-my-feature), required: a destroy runs only when it names the scope the call resolves to."}),
		Withheld: withheldRun("destroy", map[string]string{"engine": whyEngine, "approved-by": whyApprover, "allow-older-commit": whyOlderCommit}),
		desc:     "Destroy everything the scope owns (sponson destroy --json). Needs confirm naming the scope."},
	{Name: "status", Command: "status", readOnly: true, Params: []toolParam{{Name: "stack", Flag: "stack", desc: "Show only this stack (default: every stack of the environment)."}, pEnv, pDir, pSt,
		{Name: "state", Flag: "state", desc: "Show only the scopes in this state: running, stale-lease, drifted, collectable, failed or destroyed."},
		{Name: "open_prs", Flag: "open-prs", desc: "The open pull requests (12,15, or none): what gc would collect then counts closed ones."},
		{Name: "older_than", Flag: "older-than", desc: "An age (720h, 30d): what gc would collect then counts scopes whose last run is older."},
		{Name: "drift", Flag: "drift", desc: "A file holding the output of sponson drift --json: the scopes' drift (drift records nothing in the store)."}},
		Withheld: map[string]string{"html": "it writes a file for people; the tool's result carries the same model as JSON (overview)"},
		desc:     "The environment's scopes (sponson status --json): each scope's last run, lease and owned resources, and the overview: owner, age, states, what gc would collect and why, the stacks in dependency order."},
	{Name: "receipt", Command: "receipt", readOnly: true, Params: []toolParam{pStk, pEnv, pSc, pPR, pBr, pDir, pSt},
		desc: "The scope's latest receipt (sponson receipt --json): who applied what, from which commit, with which outcome."},
	{Name: "output", Command: "output", guarded: true, readOnly: true,
		Params: []toolParam{pStk, pEnv, pSc, pPR, pBr, pDir, pSt,
			{Name: "raw", kind: kindBool, Flag: "raw", desc: "The value of one string output as it is (with name)."},
			{Name: "name", Positional: true, desc: "One output's name (default: all outputs)."}},
		desc: "The scope's outputs from its state in the store (sponson output --json)."},
	{Name: "drift", Command: "drift", guarded: true, readOnly: true,
		Params: []toolParam{pEnv, pDir, pSt,
			{Name: "variables", kind: kindVars, Flag: "var", desc: "Input variables, NAME to VALUE, passed to the engine as -var NAME=VALUE."},
			{Name: "var_files", kind: kindStrings, Flag: "var-file", desc: "Variable files passed to the engine as -var-file."},
			pSummary,
			{Name: "allow_empty", kind: kindBool, Flag: "allow-empty", desc: "Succeed when the environment has no scope to check (without it that is DRIFT_CHECK_FAILED: most often the wrong store, environment or directory)."},
			{Name: "scopes", kind: kindStrings, Positional: true, desc: "Scopes to check (default: every scope of the environment)."}},
		Withheld: map[string]string{"engine": whyEngine, "all": whyOneStack, "parallelism": whyOneStack},
		desc:     "Refresh-only plans of the environment's scopes against the real infrastructure (sponson drift --json); changes nothing."},
}

// InputSchema is the JSON schema of a tool's arguments.
func (t ToolSpec) InputSchema() map[string]any {
	props := map[string]any{}
	for _, p := range t.Params {
		var s map[string]any
		switch p.kind {
		case kindBool:
			s = map[string]any{"type": "boolean"}
		case kindInt:
			s = map[string]any{"type": "integer"}
		case kindStrings:
			s = map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
		case kindVars:
			s = map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}}
		default:
			s = map[string]any{"type": "string"}
		}
		s["description"] = p.desc
		props[p.Name] = s
	}
	schema := map[string]any{"type": "object", "properties": props}
	if t.confirm {
		schema["required"] = []string{"confirm"}
	}
	return schema
}

// ToolArgs is a tool call's arguments, as the client sent them.
type ToolArgs map[string]json.RawMessage

// approvalKey reports whether an argument tries to approve the run or to
// set the run's environment variables (an object under an env-like name):
// an agent may do neither, whatever the spelling.
func approvalKey(name string, value json.RawMessage) bool {
	n := strings.NewReplacer("_", "", "-", "", " ", "").Replace(strings.ToLower(name))
	if strings.Contains(n, "approv") {
		return true
	}
	isObject := strings.HasPrefix(strings.TrimSpace(string(value)), "{")
	return isObject && slices.Contains([]string{"env", "envs", "envvars", "environmentvariables", "environ", "environment"}, n)
}

// refuseApproval is the refusal of a call that carries an approver.
func refuseApproval(tool, key string) error {
	return errcode.New(errcode.EnvNotApproved, "%s: the argument %q is refused: an agent cannot approve its own run or set the run's environment", tool, key).
		WithHint("Ask the person running the MCP server to approve: they restart it with `sponson mcp --approved-by NAME` (and --allow-production for production), or run the command themselves.").
		With("argument", key)
}

// Argv turns a call's arguments into the command line of the tool's
// command, every value one argument (--flag=VALUE), so no value can be read
// as another flag. The destroy confirmation is returned apart.
func (t ToolSpec) Argv(args ToolArgs) (cli []string, confirm string, err error) {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if approvalKey(k, args[k]) {
			return nil, "", refuseApproval(t.Name, k)
		}
	}
	cli = []string{t.Command, "--json"}
	var positional []string
	for _, k := range keys {
		i := slices.IndexFunc(t.Params, func(p toolParam) bool { return p.Name == k })
		if i < 0 {
			return nil, "", errcode.New(errcode.Usage, "%s has no parameter %q", t.Name, k).
				WithHint(fmt.Sprintf("The parameters of %s: %s.", t.Name, strings.Join(t.paramNames(), ", "))).With("parameter", k)
		}
		p := t.Params[i]
		raw := args[k]
		if string(raw) == "null" {
			continue
		}
		vals, err := p.values(raw)
		if err != nil {
			return nil, "", errcode.Wrap(errcode.Usage, err, "%s: parameter %s", t.Name, k)
		}
		switch {
		case p.Name == "confirm":
			confirm = vals[0]
		case p.Positional:
			for _, v := range vals {
				if strings.HasPrefix(v, "-") {
					return nil, "", errcode.New(errcode.Usage, "%s: %s %q must not start with '-'", t.Name, k, v)
				}
			}
			positional = append(positional, vals...)
		default:
			prefix := "--" + p.Flag
			if p.Engine {
				prefix = p.Flag
			}
			for _, v := range vals {
				cli = append(cli, prefix+"="+v)
			}
		}
	}
	return append(cli, positional...), confirm, nil
}

// values decodes one parameter's value into the argument values it gives.
func (p toolParam) values(raw json.RawMessage) ([]string, error) {
	switch p.kind {
	case kindBool:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("want a boolean: %w", err)
		}
		return []string{fmt.Sprint(b)}, nil
	case kindInt:
		var n int
		if err := json.Unmarshal(raw, &n); err != nil {
			return nil, fmt.Errorf("want a whole number: %w", err)
		}
		return []string{fmt.Sprint(n)}, nil
	case kindStrings:
		var ss []string
		if err := json.Unmarshal(raw, &ss); err != nil {
			return nil, fmt.Errorf("want an array of strings: %w", err)
		}
		return ss, nil
	case kindVars:
		var m map[string]string
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("want an object of strings: %w", err)
		}
		names := make([]string, 0, len(m))
		for k := range m {
			if k == "" || strings.ContainsRune(k, '=') {
				return nil, fmt.Errorf("variable name %q is not valid", k)
			}
			names = append(names, k)
		}
		sort.Strings(names)
		out := make([]string, 0, len(names))
		for _, k := range names {
			out = append(out, k+"="+m[k])
		}
		return out, nil
	default:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("want a string: %w", err)
		}
		return []string{s}, nil
	}
}

// contextFlags picks the context flags of a call's arguments, for the
// server's own checks (the environment, destroy's confirmation).
func contextFlags(args ToolArgs) map[string]string {
	out := map[string]string{}
	for _, k := range []string{"environment", "scope", "pull_request", "branch", "commit", "directory"} {
		var s string
		if raw, ok := args[k]; ok && json.Unmarshal(raw, &s) == nil {
			out[k] = s
		}
	}
	return out
}

func (t ToolSpec) paramNames() []string {
	names := make([]string, 0, len(t.Params))
	for _, p := range t.Params {
		names = append(names, p.Name)
	}
	return names
}
