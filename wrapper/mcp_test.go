package wrapper

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sponson/terraform-provider-sponson/internal/engineflag"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
	"github.com/sponson/terraform-provider-sponson/wrapper/mcpcmd"
)

// TestMCPToolsMirrorFlags keeps the tools and the CLI in step: every flag
// of a tool's command is a parameter of the tool or withheld with a reason,
// and every parameter names a flag the command has.
func TestMCPToolsMirrorFlags(t *testing.T) {
	t.Parallel()
	root := newCmdRoot(&cmdutil.Factory{Getenv: func(string) string { return "" }}, &cmdutil.Outcome{}, nil)
	commands := map[string]*cobra.Command{}
	for _, c := range root.Commands() {
		commands[c.Name()] = c
	}
	for _, tool := range mcpcmd.MCPTools {
		cmd, ok := commands[tool.Command]
		if !ok {
			t.Errorf("tool %s runs `sponson %s`, which does not exist", tool.Name, tool.Command)
			continue
		}
		byFlag := map[string]string{}
		names := map[string]bool{}
		for _, p := range tool.Params {
			if names[p.Name] {
				t.Errorf("tool %s: parameter %s twice", tool.Name, p.Name)
			}
			names[p.Name] = true
			if p.Positional || p.Engine || p.Name == "confirm" {
				continue
			}
			byFlag[p.Flag] = p.Name
			fl := cmd.Flags().Lookup(p.Flag)
			if fl == nil || fl.Hidden {
				t.Errorf("tool %s: parameter %s sets --%s, which `sponson %s` does not have", tool.Name, p.Name, p.Flag, tool.Command)
			}
		}
		mirrorEngineFlags(t, tool)
		for flag := range tool.Withheld {
			if strings.HasPrefix(flag, "-") {
				continue
			}
			if cmd.Flags().Lookup(flag) == nil {
				t.Errorf("tool %s withholds --%s, which `sponson %s` does not have", tool.Name, flag, tool.Command)
			}
		}
		cmd.Flags().VisitAll(func(fl *pflag.Flag) {
			if fl.Hidden || fl.Name == "help" {
				return
			}
			_, param := byFlag[fl.Name]
			_, withheld := tool.Withheld[fl.Name]
			if !param && !withheld {
				t.Errorf("`sponson %s --%s` has no parameter in tool %s: add one to mcpTools, or withhold it with the reason", tool.Command, fl.Name, tool.Name)
			}
			if param && withheld {
				t.Errorf("tool %s: --%s is both a parameter and withheld", tool.Name, fl.Name)
			}
		})
	}
}

// mirrorEngineFlags holds a run tool to engineflag's table: every engine
// flag the command accepts is a parameter of the tool or withheld with a
// reason, and every engine parameter is a flag the command accepts.
func mirrorEngineFlags(t *testing.T, tool mcpcmd.ToolSpec) {
	t.Helper()
	if !slices.Contains([]string{engineflag.Plan, engineflag.Apply, engineflag.Destroy}, tool.Command) {
		for _, p := range tool.Params {
			if p.Engine {
				t.Errorf("tool %s: parameter %s is an engine flag, but `sponson %s` takes none", tool.Name, p.Name, tool.Command)
			}
		}
		return
	}
	accepted := engineflag.Names(tool.Command)
	params := map[string]string{}
	for _, p := range tool.Params {
		if !p.Engine {
			continue
		}
		params[p.Flag] = p.Name
		if !slices.Contains(accepted, p.Flag) {
			t.Errorf("tool %s: parameter %s sets %s, which `sponson %s` does not accept (engineflag)", tool.Name, p.Name, p.Flag, tool.Command)
		}
	}
	for _, flag := range accepted {
		_, param := params[flag]
		why, withheld := tool.Withheld[flag]
		if !param && !withheld {
			t.Errorf("`sponson %s %s` has no parameter in tool %s: add one to mcpTools, or withhold it with the reason", tool.Command, flag, tool.Name)
		}
		if param && withheld {
			t.Errorf("tool %s: %s is both a parameter and withheld", tool.Name, flag)
		}
		if withheld && strings.TrimSpace(why) == "" {
			t.Errorf("tool %s withholds %s without a reason", tool.Name, flag)
		}
	}
	for flag := range tool.Withheld {
		if strings.HasPrefix(flag, "-") && !slices.Contains(accepted, flag) {
			t.Errorf("tool %s withholds %s, which `sponson %s` does not accept", tool.Name, flag, tool.Command)
		}
	}
}

func TestMCPArgv(t *testing.T) {
	t.Parallel()
	apply := toolByName(t, "apply")
	tests := []struct {
		name    string
		tool    mcpcmd.ToolSpec
		args    string
		want    []string
		confirm string
		code    errcode.Code
	}{
		{name: "branch and variables", tool: apply, args: `{"branch":"feat","directory":"infra","variables":{"b":"2","a":"x=y"},"wait":true,"wait_timeout":"5m"}`,
			want: []string{"apply", "--json", "--branch=feat", "--chdir=infra", "-var=a=x=y", "-var=b=2", "--wait=true", "--wait-timeout=5m"}},
		{name: "a value is never a flag", tool: apply, args: `{"scope":"--approved-by=me"}`, want: []string{"apply", "--json", "--scope=--approved-by=me"}},
		{name: "approver", tool: apply, args: `{"approved_by":"me"}`, code: errcode.EnvNotApproved},
		{name: "approver spelled otherwise", tool: apply, args: `{"Approved-By":"me"}`, code: errcode.EnvNotApproved},
		{name: "approver on plan", tool: toolByName(t, "plan"), args: `{"approver":"me"}`, code: errcode.EnvNotApproved},
		{name: "environment variables", tool: apply, args: `{"env":{"SPONSON_APPROVED_BY":"me"}}`, code: errcode.EnvNotApproved},
		{name: "environment variables as environment", tool: apply, args: `{"environment":{"SPONSON_APPROVED_BY":"me"}}`, code: errcode.EnvNotApproved},
		{name: "the CLI's flag name is not a parameter", tool: apply, args: `{"env":"preview"}`, code: errcode.Usage},
		{name: "unknown parameter", tool: apply, args: `{"colour":"red"}`, code: errcode.Usage},
		{name: "wrong type", tool: apply, args: `{"wait":"yes"}`, code: errcode.Usage},
		{name: "destroy confirm", tool: toolByName(t, "destroy"), args: `{"scope":"s","confirm":"s"}`, want: []string{"destroy", "--json", "--scope=s"}, confirm: "s"},
		{name: "drift scopes", tool: toolByName(t, "drift"), args: `{"scopes":["b","a"],"variables":{"n":"1"}}`, want: []string{"drift", "--json", "--var=n=1", "b", "a"}},
		{name: "a positional is never a flag", tool: toolByName(t, "output"), args: `{"name":"-raw"}`, code: errcode.Usage},
		{name: "plan out and engine flags", tool: toolByName(t, "plan"), args: `{"out":"p.plan","replace":["a.b","c.d"],"refresh_only":true,"parallelism":3,"exclude":["e.f"]}`,
			want: []string{"plan", "--json", "-exclude=e.f", "-out=p.plan", "-parallelism=3", "-refresh-only=true", "-replace=a.b", "-replace=c.d"}},
		{name: "refresh false", tool: apply, args: `{"refresh":false,"lock_timeout":"30s"}`, want: []string{"apply", "--json", "-lock-timeout=30s", "-refresh=false"}},
		{name: "apply a saved plan", tool: apply, args: `{"plan_file":"p.plan","branch":"feat"}`, want: []string{"apply", "--json", "--branch=feat", "p.plan"}},
		// The CLI refuses a saved plan with variables or engine flags; the
		// tool passes both for its envelope to say so.
		{name: "saved plan with a variable", tool: apply, args: `{"plan_file":"p.plan","variables":{"a":"1"}}`, want: []string{"apply", "--json", "-var=a=1", "p.plan"}},
		{name: "a plan file is never a flag", tool: apply, args: `{"plan_file":"-destroy"}`, code: errcode.Usage},
		{name: "parallelism is a whole number", tool: apply, args: `{"parallelism":2.5}`, code: errcode.Usage},
		{name: "parallelism is not a string", tool: apply, args: `{"parallelism":"4"}`, code: errcode.Usage},
		{name: "destroy has no replace", tool: toolByName(t, "destroy"), args: `{"replace":["a.b"],"confirm":"s"}`, code: errcode.Usage},
		{name: "plan has no plan_file", tool: toolByName(t, "plan"), args: `{"plan_file":"p.plan"}`, code: errcode.Usage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var args mcpcmd.ToolArgs
			if err := json.Unmarshal([]byte(tt.args), &args); err != nil {
				t.Fatal(err)
			}
			got, confirm, err := tt.tool.Argv(args)
			if tt.code != "" {
				if errcode.As(err).Code != tt.code {
					t.Fatalf("error %v, want %s", err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("argv (-want +got):\n%s", d)
			}
			if confirm != tt.confirm {
				t.Errorf("confirm %q, want %q", confirm, tt.confirm)
			}
		})
	}
}

func toolByName(t *testing.T, name string) mcpcmd.ToolSpec {
	t.Helper()
	i := slices.IndexFunc(mcpcmd.MCPTools, func(s mcpcmd.ToolSpec) bool { return s.Name == name })
	if i < 0 {
		t.Fatalf("no tool %s", name)
	}
	return mcpcmd.MCPTools[i]
}

func TestProgressReader(t *testing.T) {
	t.Parallel()
	var got []mcpcmd.ProgressUpdate
	r := mcpcmd.NewProgressReader(func(p mcpcmd.ProgressUpdate) { got = append(got, p) })
	// The steps as a run writes them (cmdutil.ProgressPipe), with a line
	// that is not one, which is skipped.
	steps := strings.Join([]string{
		`{"step":"start","message":"sponson apply · preview · branch-x · run 1a2b"}`,
		`{"step":"lease","message":"waiting for preview/branch-x: held by run 9f (@alice) since 10:02, lease until 10:17 — waited 2s"}`,
		`{"step":"init"}`,
		`not a step`,
		`{"step":"plan","summary":{"add":2,"change":0,"destroy":1}}`,
		`{"step":"apply_start","address":"null_resource.a","action":"create"}`,
		`{"step":"apply_complete","address":"null_resource.a","action":"create"}`,
		`{"step":"apply_complete","address":"null_resource.b","action":"delete"}`,
		`{"step":"applied"}`,
		`{"step":"plan","summary":{"add":0,"change":0,"destroy":0}}`,
	}, "\n")
	if _, err := r.ReadFrom(strings.NewReader(steps)); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"start: sponson apply · preview · branch-x · run 1a2b",
		"lease: waiting for preview/branch-x: held by run 9f (@alice) since 10:02, lease until 10:17 — waited 2s",
		"init: the engine initialises the configuration",
		"plan: 2 to add, 0 to change, 1 to destroy",
		"apply: null_resource.a: create started (0 of 3 done)",
		"apply: 1 of 3 resources done: null_resource.a (create)",
		"apply: 2 of 3 resources done: null_resource.b (delete)",
		"apply: complete, 2 of 3 resources done",
		"plan: no changes",
	}
	var msgs []string
	for i, p := range got {
		msgs = append(msgs, p.Message)
		if p.Progress != float64(i+1) {
			t.Errorf("update %d has progress %v; progress must grow by one", i, p.Progress)
		}
	}
	if d := cmp.Diff(want, msgs); d != "" {
		t.Errorf("progress messages (-want +got):\n%s", d)
	}
}

// TestMCPServerRefuses runs the server in-process over the SDK's in-memory
// transport: what it refuses itself never starts a process.
func TestMCPServerRefuses(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	decl := "environment \"preview\" {}\nenvironment \"staging\" {\n  protected = true\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "sponson.hcl"), []byte(decl), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "sponson.hcl"), []byte(`environment "staging" {}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		tool string
		args map[string]any
		code errcode.Code
	}{
		{"approver argument", "apply", map[string]any{"directory": dir, "environment": "production", "approved_by": "alice"}, errcode.EnvNotApproved},
		{"production without --allow-production", "apply", map[string]any{"directory": dir, "environment": "production"}, errcode.EnvNotApproved},
		{"production plan", "plan", map[string]any{"directory": dir, "environment": "Production"}, errcode.EnvNotApproved},
		{"destroy without confirm", "destroy", map[string]any{"directory": dir, "scope": "branch-x"}, errcode.Usage},
		{"destroy confirming another scope", "destroy", map[string]any{"directory": dir, "scope": "branch-x", "confirm": "branch-y"}, errcode.Usage},
		// The server's rules cannot be widened (issue 28 item 2).
		{"directory outside the root", "plan", map[string]any{"directory": "/etc"}, errcode.Usage},
		{"var file outside the root", "plan", map[string]any{"directory": dir, "var_files": []string{"/etc/hostname"}}, errcode.Usage},
		{"summary outside the root", "plan", map[string]any{"directory": dir, "summary": "/tmp/sponson-mcp-summary.md"}, errcode.Usage},
		{"out through a symlink out of the root", "plan", map[string]any{"directory": dir, "out": filepath.Join(dir, "escape", "plan.tfplan")}, errcode.Usage},
		{"plan file upwards", "apply", map[string]any{"directory": dir, "plan_file": "../../plan.tfplan"}, errcode.Usage},
		{"gitlab report outside the root", "plan", map[string]any{"directory": dir, "gitlab_report": "/tmp/sponson-mcp-report.json"}, errcode.Usage},
		{"own sponson.hcl unprotecting staging", "apply", map[string]any{"directory": filepath.Join(dir, "sub"), "environment": "staging"}, errcode.Usage},
		{"staging is protected by the root", "apply", map[string]any{"directory": dir, "environment": "staging"}, errcode.EnvNotApproved},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			session := connectInProcess(t, &mcpcmd.MCPOptions{ApprovedBy: "bob", LogDir: t.TempDir(), Root: dir})
			res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: tt.tool, Arguments: tt.args})
			if err != nil {
				t.Fatal(err)
			}
			env := envelopeOf(t, res)
			if !res.IsError || env.OK || env.Error == nil || env.Error.Code != tt.code || env.Command != tt.tool {
				t.Fatalf("result %+v, want a %s envelope of %s", env, tt.code, tt.tool)
			}
			if env.Exit != int(errcode.ExitFor(errcode.New(tt.code, "x"))) {
				t.Errorf("exitCode %d is not the CLI's for %s", env.Exit, tt.code)
			}
		})
	}
}

func connectInProcess(t *testing.T, opts *mcpcmd.MCPOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, ct := mcp.NewInMemoryTransports()
	opts.IO = &cmdutil.IO{Getenv: func(string) string { return "" }, ErrOut: &bytes.Buffer{}}
	s, err := mcpcmd.NewMCPServer(opts, "/nonexistent/sponson")
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "sponson"}, nil)
	for _, tool := range mcpcmd.MCPTools {
		srv.AddTool(&mcp.Tool{Name: tool.Name, InputSchema: tool.InputSchema()}, s.Handler(tool))
	}
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = session.Close() })
	return session
}

func envelopeOf(t *testing.T, res *mcp.CallToolResult) cmdutil.Envelope {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatal("no content")
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %T", res.Content[0])
	}
	var env cmdutil.Envelope
	if err := json.Unmarshal([]byte(strings.TrimSpace(text.Text)), &env); err != nil {
		t.Fatalf("content is not an envelope: %v\n%s", err, text.Text)
	}
	return env
}
