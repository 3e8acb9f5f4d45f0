package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestE2EMCP drives `sponson mcp` as an agent would: the server is a
// subprocess, the client the SDK's, the engine real. Every result is the
// CLI's --json envelope.
func TestE2EMCP(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	dir := h.workdir("testdata/slow")
	ctx := context.Background()

	var progressMu lockedBuffer // every progress message, one a line
	server := h.guarded(dir, h.env, h.bin, "mcp", "--log-dir", t.TempDir())
	var serverErr lockedBuffer
	server.Stderr = &serverErr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server stderr:\n%s\nprogress:\n%s", serverErr.String(), progressMu.String())
		}
	})
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			_, _ = progressMu.Write([]byte(req.Params.Message + "\n"))
		},
	})
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: server}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()

	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"apply", "destroy", "drift", "output", "plan", "receipt", "status"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	call := func(ctx context.Context, name string, args map[string]any) (map[string]any, error) {
		params := &mcp.CallToolParams{Name: name, Arguments: args}
		params.SetProgressToken(name)
		res, err := session.CallTool(ctx, params)
		if err != nil {
			return nil, err
		}
		var env map[string]any
		text := res.Content[0].(*mcp.TextContent).Text
		if err := json.Unmarshal([]byte(text), &env); err != nil {
			t.Fatalf("%s: the result is not an envelope: %v\n%s", name, err, text)
		}
		if ok, _ := env["ok"].(bool); ok == res.IsError {
			t.Errorf("%s: isError %v with ok %v", name, res.IsError, ok)
		}
		return env, nil
	}
	mustCall := func(name string, args map[string]any) map[string]any {
		t.Helper()
		env, err := call(ctx, name, args)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if env["ok"] != true || env["exitCode"] != float64(0) {
			t.Fatalf("%s: %v\nserver stderr:\n%s", name, env, serverErr.String())
		}
		return env
	}
	refused := func(name string, args map[string]any, code string) map[string]any {
		t.Helper()
		env, err := call(ctx, name, args)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		e, _ := env["error"].(map[string]any)
		if env["ok"] != false || e["code"] != code {
			t.Fatalf("%s: %v, want %s", name, env, code)
		}
		return env
	}
	resultOf := func(env map[string]any) map[string]any { r, _ := env["result"].(map[string]any); return r }

	// A local branch's scope, applied by the agent.
	branch := map[string]any{"branch": "agent-work", "variables": map[string]any{"sleep": "0", "input": "one"}}
	applied := resultOf(mustCall("apply", branch))
	if applied["scope"] != "branch-agent-work" || applied["status"] != "applied" {
		t.Fatalf("apply result %v, want scope branch-agent-work applied", applied)
	}
	// The server is the run's actor; no approval was needed in preview,
	// so none is recorded (issue 28 item 2).
	if rec := latestReceipt(t, dir, "preview", "branch-agent-work"); !strings.HasPrefix(rec.Actor, "mcp:") || rec.ApprovedBy != "" {
		t.Errorf("the agent's receipt: actor %q, approved by %q", rec.Actor, rec.ApprovedBy)
	}
	if !strings.Contains(progressMu.String(), "plan: 2 to add") || !strings.Contains(progressMu.String(), "apply: 2 of 2 resources done") {
		t.Errorf("progress of the apply:\n%s", progressMu.String())
	}
	// What a call costs over the command itself (logged, not asserted).
	start := time.Now()
	status := mustCall("status", nil)
	viaTool := time.Since(start)
	start = time.Now()
	h.mustRun(dir, "status", "--json")
	t.Logf("status: %s as a tool call, %s as a command", viaTool, time.Since(start))
	if !strings.Contains(mustJSON(t, status), `"branch-agent-work"`) {
		t.Errorf("status does not show the scope: %v", status)
	}
	receipt := resultOf(mustCall("receipt", map[string]any{"branch": "agent-work"}))
	if !strings.Contains(mustJSON(t, receipt), applied["runId"].(string)) {
		t.Errorf("receipt %v is not the apply's run %v", receipt, applied["runId"])
	}

	// Never its own approver, never production on its own.
	refused("apply", map[string]any{"environment": "production", "branch": "agent-work", "approved_by": "agent"}, "ENV_NOT_APPROVED")
	refused("apply", map[string]any{"environment": "production", "branch": "agent-work"}, "ENV_NOT_APPROVED")
	if _, err := os.Stat(dir + "/.sponson/production"); err == nil {
		t.Error("a refused production apply wrote the store")
	}

	// A CLI run holds the scope: the tool gets LOCK_HELD, or waits for it
	// with progress saying who holds it.
	cli := h.command(dir, nil, "apply", "--branch", "agent-lock", "--json", "-var", "sleep=600", "-var", "input=cli")
	var cliErr lockedBuffer
	cli.Stderr = &cliErr
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the CLI run's apply", func() bool {
		return strings.Contains(cliErr.String(), "terraform_data.slow: Provisioning with 'local-exec'")
	})
	refused("apply", map[string]any{"branch": "agent-lock"}, "LOCK_HELD")
	waited := make(chan map[string]any, 1)
	go func() {
		env, _ := call(ctx, "apply", map[string]any{"branch": "agent-lock", "wait": true, "wait_timeout": "10m", "variables": map[string]any{"sleep": "0", "input": "two"}})
		waited <- env
	}()
	waitFor(t, "a progress notification of the wait", func() bool {
		return strings.Contains(progressMu.String(), "lease: waiting for") && strings.Contains(progressMu.String(), "lease until")
	})
	if err := cli.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cli.Wait(); err == nil {
		t.Errorf("the interrupted CLI run exited 0:\n%s", cliErr.String())
	}
	if env := <-waited; env == nil || env["ok"] != true {
		t.Fatalf("the waiting apply: %v\nserver stderr:\n%s", env, serverErr.String())
	}

	// Cancelled mid-apply: the run is interrupted as by SIGINT, its lease
	// released and its receipt written; what it created is in the state.
	slow := map[string]any{"branch": "agent-slow", "variables": map[string]any{"sleep": "600", "input": "slow"}}
	seen := len(progressMu.String())
	cctx, cancel := context.WithCancel(ctx)
	cancelled := make(chan error, 1)
	go func() { _, err := call(cctx, "apply", slow); cancelled <- err }()
	waitFor(t, "the slow apply's progress", func() bool {
		p := progressMu.String()[seen:]
		return strings.Contains(p, "terraform_data.slow: create started") && strings.Contains(p, "1 of 2 resources done: terraform_data.fast")
	})
	cancel()
	if err := <-cancelled; err == nil {
		t.Error("the cancelled call returned a result")
	}
	var interrupted result
	waitFor(t, "the cancelled run's receipt", func() bool {
		interrupted = h.run(dir, nil, "receipt", "--branch", "agent-slow", "--json")
		return interrupted.exit == 0 && strings.Contains(interrupted.stdout, `"status": "cancelled"`)
	})
	if !strings.Contains(interrupted.stdout, `"code": "INTERRUPTED"`) {
		t.Errorf("the cancelled run's receipt does not say it was interrupted:\n%s", interrupted.stdout)
	}
	if res := stateResources(t, dir, "preview", "branch-agent-slow"); res["terraform_data.fast"] == nil {
		t.Errorf("the cancelled run lost what it created: %v", res)
	}
	// The receipt comes before the release: the run's process ends after
	// both, which the client's cancellation does not wait for. So the
	// lease is awaited free (a run that kept it would never free it before
	// its TTL, far beyond waitFor's patience).
	waitFor(t, "the cancelled run's lease released", func() bool {
		return !scopeLeaseHeld(t, h.mustRun(dir, "status", "--json"), "branch-agent-slow")
	})
	slow["variables"] = map[string]any{"sleep": "0", "input": "slow"}
	// Without wait: LOCK_HELD had the cancelled run kept its lease.
	mustCall("apply", slow)

	// Destroy names its scope.
	refused("destroy", map[string]any{"branch": "agent-lock", "confirm": "branch-other"}, "USAGE")
	destroyed := resultOf(mustCall("destroy", map[string]any{"branch": "agent-lock", "confirm": "branch-agent-lock", "variables": map[string]any{"sleep": "0"}}))
	if destroyed["status"] != "destroyed" {
		t.Errorf("destroy result %v", destroyed)
	}

	// The pull request of the agent's branch takes its scope over in CI.
	pr := h.mustRun(dir, "apply", "--pr", "21", "--branch", "agent-work", "-var", "sleep=0", "-var", "input=one")
	if !strings.Contains(pr.stderr, "inherited 2 resources from branch-agent-work") {
		t.Errorf("the pull request did not take the branch's scope over:\n%s", pr.stderr)
	}
	taken := resultOf(mustCall("receipt", map[string]any{"pull_request": "21"}))
	if taken["inheritedFrom"] != "branch-agent-work" {
		t.Errorf("pr-21's receipt: %v", taken)
	}
	if err := session.Close(); err != nil {
		t.Logf("closing: %v", err)
	}
	if server.ProcessState != nil && !server.ProcessState.Success() {
		t.Errorf("the server exited %v:\n%s", server.ProcessState, serverErr.String())
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestE2EMCPSavedPlanAndEngineFlags: through the tools, plan with out and
// apply its plan_file applies exactly the saved plan (the CLI's refusal of
// a saved plan with variables comes back in the envelope), and an engine
// flag (replace) reaches the engine.
func TestE2EMCPSavedPlanAndEngineFlags(t *testing.T) {
	t.Parallel()
	h := e2e(t)
	dir := h.workdir("testdata/slow")
	ctx := context.Background()
	server := h.guarded(dir, h.env, h.bin, "mcp", "--log-dir", t.TempDir())
	var serverErr lockedBuffer
	server.Stderr = &serverErr
	session, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(ctx, &mcp.CommandTransport{Command: server}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var env map[string]any
		if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &env); err != nil {
			t.Fatalf("%s: the result is not an envelope: %v", name, err)
		}
		if ok, _ := env["ok"].(bool); ok == res.IsError {
			t.Errorf("%s: isError %v with ok %v", name, res.IsError, ok)
		}
		return env
	}
	mustCall := func(name string, args map[string]any) map[string]any {
		t.Helper()
		env := call(name, args)
		if env["ok"] != true {
			t.Fatalf("%s %v: %v\nserver stderr:\n%s", name, args, env, serverErr.String())
		}
		r, _ := env["result"].(map[string]any)
		return r
	}

	// The plan sets input "saved"; the configuration's default is "slow",
	// so an apply that planned again without the variables would write that.
	// Inside the server's root: a path outside it is refused (mcp_confine.go).
	plan := filepath.Join(dir, "agent.plan")
	mustCall("plan", map[string]any{"branch": "agent-saved", "out": plan, "variables": map[string]any{"sleep": "0", "input": "saved"}})
	if _, err := os.Stat(plan); err != nil {
		t.Fatalf("plan with out wrote no plan file: %v", err)
	}
	if _, err := os.Stat(scopeDir(dir, "preview", "branch-agent-saved") + "/terraform.tfstate"); err == nil {
		t.Fatal("plan with out wrote the scope's state")
	}
	env := call("apply", map[string]any{"branch": "agent-saved", "plan_file": plan, "variables": map[string]any{"input": "other"}})
	if e, _ := env["error"].(map[string]any); env["ok"] != false || e["code"] != "USAGE" || !strings.Contains(fmt.Sprint(e["message"]), "saved plan") {
		t.Fatalf("apply of a saved plan with variables: %v, want the CLI's USAGE refusal", env)
	}
	applied := mustCall("apply", map[string]any{"branch": "agent-saved", "plan_file": plan})
	if applied["status"] != "applied" {
		t.Fatalf("apply plan_file: %v", applied)
	}
	before := stateResources(t, dir, "preview", "branch-agent-saved")
	for _, addr := range []string{"terraform_data.fast", "terraform_data.slow"} {
		if got := dynamic(before[addr]["input"]); got != "saved" {
			t.Errorf("%s input %v after apply plan_file, want the saved plan's \"saved\"", addr, got)
		}
	}

	// replace reaches the engine: fast is created again, slow is kept.
	mustCall("apply", map[string]any{"branch": "agent-saved", "replace": []string{"terraform_data.fast"}, "variables": map[string]any{"sleep": "0", "input": "saved"}})
	after := stateResources(t, dir, "preview", "branch-agent-saved")
	if after["terraform_data.fast"]["id"] == before["terraform_data.fast"]["id"] {
		t.Errorf("replace did not replace terraform_data.fast (id %v)", after["terraform_data.fast"]["id"])
	}
	if after["terraform_data.slow"]["id"] != before["terraform_data.slow"]["id"] {
		t.Errorf("replace of terraform_data.fast replaced terraform_data.slow too")
	}
}

// scopeLeaseHeld reports whether `status --json` shows a live lease on
// scope.
func scopeLeaseHeld(t *testing.T, status result, scope string) bool {
	t.Helper()
	res, _ := status.envelope(t)["result"].(map[string]any)
	rows, _ := res["scopes"].([]any)
	for _, r := range rows {
		row, _ := r.(map[string]any)
		if row["scope"] == scope {
			return row["lease"] != nil
		}
	}
	return false
}
