// Package mcpcmd is `sponson mcp`: the commands offered to an agent as MCP
// tools, confined to one repository (docs/design.md §4.6).
//
// A tool call is a command line: each parameter is one flag of the command
// or its positional argument, each value passed as one `--flag=VALUE`
// argument so that no value is read as another flag, and the call runs
// `sponson COMMAND --json` in a process of its own, whose envelope is the
// result. TestMCPToolsMirrorFlags keeps the tools in step with the
// commands' flags and internal/engineflag: each flag is a parameter or
// withheld with the reason. The server decides its rules at start
// (mcp_confine.go): its root and the environments the root's sponson.hcl
// declares; every path a call names must resolve inside the root, symlinks
// resolved, and a directory with a sponson.hcl of its own is refused.
package mcpcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/environments"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/runctx"
	"github.com/sponson/terraform-provider-sponson/internal/secrets"
	"github.com/sponson/terraform-provider-sponson/internal/version"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// MCPOptions are the flags of `sponson mcp`: what the person who starts the
// server decides for every tool call, and no tool call can change.
type MCPOptions struct {
	*cmdutil.IO
	// Executable is the sponson binary each tool call runs.
	Executable func() (string, error)
	// Root is the directory every path of a tool call must resolve inside
	// (default: the repository of the working directory).
	Root       string
	ApprovedBy string
	// Actor is who every run of the server is recorded as started by.
	Actor           string
	AllowProduction bool
	Engine          string
	LogDir          string
}

// mcpInterruptGrace is how long a run interrupted by the client's
// cancellation has to flush its state, release its lease and write its
// receipt before it is killed (the lease then expires by its TTL).
const mcpInterruptGrace = 2 * time.Minute

// logTailLines is how many lines of the engine's log a tool result carries;
// the result names the file with all of it.
const logTailLines = 40

// mcpFlagEnv names the SPONSON_* variable of each flag of mcp.
var mcpFlagEnv = map[string]string{"approved-by": "SPONSON_APPROVED_BY", "engine": "SPONSON_ENGINE", "log-dir": "SPONSON_MCP_LOG_DIR"}

// runMCP serves until the client leaves; only a failure is an outcome.
func runMCP(ctx context.Context, opts *MCPOptions) cmdutil.Outcome {
	if err := serveMCP(ctx, opts); err != nil {
		return cmdutil.Outcome{Command: "mcp", Err: err}
	}
	return cmdutil.Outcome{}
}

// NewCmdMCP builds `sponson mcp`.
func NewCmdMCP(f *cmdutil.Factory, out *cmdutil.Outcome) *cobra.Command {
	opts := &MCPOptions{IO: f.IO(), Executable: f.Executable}
	cmd := &cobra.Command{
		Use:   "mcp [flags]",
		Short: "Serve plan, apply, destroy, status, receipt, output and drift as Model Context Protocol tools over stdio",
		Long: `mcp serves the sponson commands as Model Context Protocol tools on stdin and
stdout, for coding agents: plan, apply, destroy, status, receipt, output and drift.
Each tool call runs the command with --json in its own process and returns
exactly its JSON document (ok true exactly when the command exits 0), the tail of
the engine's output and the path of its full log. Standard output carries only
protocol messages; the engine's output also goes to standard error.

The rules are the CLI's, and stricter: a local branch gives scope branch-<name>,
which its pull request later takes over. An agent never approves its own run: the
approver is --approved-by (or SPONSON_APPROVED_BY) of this server, set by the
person who starts it, and a tool call carrying an approver is refused with
ENV_NOT_APPROVED. Protected environments such as production are refused unless the
server was started with --allow-production. destroy needs confirm naming the scope.

The server decides its rules at start: its root (--root, default the
repository of its working directory) and the environments that root's
sponson.hcl declares. Every directory and file a call names (directory,
var_files, summary, out, plan_file, gitlab_report) must resolve inside the
root, symlinks resolved, and a directory with a sponson.hcl of its own is
refused (USAGE): a call can never unprotect an environment. The approver
reaches a run only in a protected environment.

Long runs send progress notifications (waiting for a lease: who holds it, until
when; the engine's init, plan and apply with resource counts). Cancelling a call
interrupts its run as SIGINT does: the state is flushed, the lease released and
the receipt written.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(f, out, opts, func(cmd *cobra.Command, _ []string) error {
			return cmdutil.BindEnv(cmd.Flags(), mcpFlagEnv, opts.Getenv)
		}, nil, runMCP),
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.ApprovedBy, "approved-by", "", "the approver of every run this server starts in a protected environment: the person starting it (env SPONSON_APPROVED_BY); tool calls can never set one")
	fs.BoolVar(&opts.AllowProduction, "allow-production", false, "let tool calls run in protected environments such as production (still only with --approved-by)")
	fs.StringVar(&opts.Engine, "engine", "", "`PATH` of the tofu or terraform binary of every run (env SPONSON_ENGINE)")
	fs.StringVar(&opts.Actor, "actor", "", "who the receipts and leases of this server's runs name as their actor (default: mcp: and the user who starts it)")
	fs.StringVar(&opts.Root, "root", "", "`DIR` every directory and file a tool call names must resolve inside, and whose sponson.hcl declares the environments (default: the repository of the working directory)")
	fs.StringVar(&opts.LogDir, "log-dir", "", "where each tool call's full log goes (env SPONSON_MCP_LOG_DIR; default: sponson-mcp in the temporary directory)")
	return cmd
}

// mcpServer runs the tools of one server.
type mcpServer struct {
	io   *cmdutil.IO
	opts *MCPOptions
	self string
	// cwd is the server's working directory, root the directory every
	// path of a call resolves inside, decl the environments root declares:
	// all decided at start (mcp_confine.go).
	cwd, root string
	decl      environments.Declared
}

// serveMCP serves the tools on the options' input and output until the
// client disconnects or ctx ends.
func serveMCP(ctx context.Context, opts *MCPOptions) error {
	self, err := opts.Executable()
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "cannot find the sponson executable to run the tools")
	}
	if opts.LogDir == "" {
		opts.LogDir = filepath.Join(os.TempDir(), "sponson-mcp")
	}
	if err := os.MkdirAll(opts.LogDir, 0o700); err != nil {
		return errcode.Wrap(errcode.Usage, err, "--log-dir %q", opts.LogDir)
	}
	s, err := NewMCPServer(opts, self)
	if err != nil {
		return err
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "sponson", Version: version.Version}, &mcp.ServerOptions{
		Instructions: "Sponson runs OpenTofu or Terraform per scope: a local branch is scope branch-<name>, its pull request takes it over. Results are the CLI's --json envelope. You cannot approve runs in protected environments; ask the person running this server.",
	})
	for _, t := range MCPTools {
		destructive := t.Name == "destroy" || t.Name == "apply"
		srv.AddTool(&mcp.Tool{
			Name:        t.Name,
			Description: t.desc,
			InputSchema: t.InputSchema(),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: t.readOnly, DestructiveHint: &destructive},
		}, s.Handler(t))
	}
	in := opts.In
	if in == nil {
		in = os.Stdin
	}
	err = srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{opts.Out}})
	if err != nil && ctx.Err() == nil && !strings.Contains(err.Error(), "EOF") {
		return errcode.Wrap(errcode.Internal, err, "mcp server")
	}
	return nil
}

// NewMCPServer decides the server's rules: its working directory, root and
// declared environments.
func NewMCPServer(opts *MCPOptions, self string) (*mcpServer, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "reading the working directory")
	}
	root, err := mcpRoot(cwd, opts.Root)
	if err != nil {
		return nil, err
	}
	decl, err := environments.Load(root)
	if err != nil {
		return nil, err
	}
	return &mcpServer{io: opts.IO, opts: opts, self: self, cwd: cwd, root: root, decl: decl}, nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// Handler runs one tool's calls.
func (s *mcpServer) Handler(t ToolSpec) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args ToolArgs
		if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &args); err != nil {
				return refusal(t, errcode.Wrap(errcode.Usage, err, "%s: the arguments are not a JSON object", t.Name)), nil
			}
		}
		argv, confirm, err := t.Argv(args)
		if err == nil {
			err = s.confine(t.Name, args)
		}
		if err == nil {
			err = s.check(t, args, confirm)
		}
		if err != nil {
			return refusal(t, err), nil
		}
		_, approve := s.protected(args)
		return s.run(ctx, req, t, argv, approve), nil
	}
}

// check refuses, before any process starts, what the server decides: a
// protected environment the server was not allowed, and a destroy whose
// confirmation does not name its scope.
func (s *mcpServer) check(t ToolSpec, args ToolArgs, confirm string) error {
	c := contextFlags(args)
	dir := s.abs(orDefault(c["directory"], "."))
	if t.guarded && !s.opts.AllowProduction {
		// Protected as the server's declaration says; an environment that
		// is not declared is the command's to refuse (ENV_UNDECLARED).
		if env, protected := s.protected(args); protected {
			return errcode.New(errcode.EnvNotApproved, "%s in %s is refused: the environment is protected and this MCP server was not started with --allow-production", t.Name, env.Name).
				WithHint("Agents do not run in protected environments on their own. A person who may approves by restarting the server with `sponson mcp --allow-production --approved-by NAME`, or runs the command themselves.").
				With("environment", env.Name)
		}
	}
	if !t.confirm {
		return nil
	}
	src := runctx.ProcessSources(dir)
	src.Getenv = s.io.Getenv
	rc, err := runctx.Detect(runctx.Flags{Environment: c["environment"], Scope: c["scope"], Branch: c["branch"], PullRequest: c["pull_request"], Commit: c["commit"]}, src)
	if err != nil {
		return err
	}
	if strings.TrimSpace(confirm) != rc.Scope {
		return errcode.New(errcode.Usage, "%s: confirm %q does not name the scope this call destroys, %s", t.Name, confirm, rc.Scope).
			WithHint(fmt.Sprintf("Call destroy again with confirm %q if %s/%s is what you mean to destroy.", rc.Scope, rc.Environment, rc.Scope)).
			With("scope", rc.Scope).With("environment", rc.Environment)
	}
	return nil
}

// passSteps hands the run a pipe for its steps (cmdutil.ProgressFDVar), as
// JSON lines that prog turns into notifications. Once the run started,
// started drops this process's end for writing and reads; once it ended,
// ended waits for the last step: the pipe ends with the run, which closes its
// descriptor on exec (cmdutil.CloseProgressOnExec), so no process it started
// holds it.
func passSteps(cmd *exec.Cmd, prog *progressReader) (started, ended func(), err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, w)
	cmd.Env = append(cmd.Env, cmdutil.ProgressFDVar+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
	read := make(chan struct{})
	started = func() {
		w.Close()
		go func() {
			defer close(read)
			_, _ = prog.ReadFrom(r)
		}()
	}
	ended = func() {
		<-read
		r.Close()
	}
	return started, ended, nil
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// refusal is the result of a call the server refuses itself: the same
// envelope the command would print.
func refusal(t ToolSpec, err error) *mcp.CallToolResult {
	var b bytes.Buffer
	cmdutil.WriteEnvelope(&b, cmdutil.Outcome{Command: t.Command, Err: err})
	doc := bytes.TrimSpace(b.Bytes())
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(doc)}},
		StructuredContent: json.RawMessage(doc),
		IsError:           true,
	}
}

// run runs the tool's command as its own process: the engine sets its
// variables in the process environment (internal/engine), so one sponson
// process runs one engine session, and calls run side by side without
// sharing one. Its stdout is the envelope; its stderr (sponson's lines and
// the engine's output) goes to the call's log and to the server's stderr;
// its steps, on a pipe of their own, become progress notifications to the
// client. Cancellation sends it SIGINT.
//
// The server's approver goes to the run only where the call's environment
// is protected, so a receipt names an approver only where one was needed.
func (s *mcpServer) run(ctx context.Context, req *mcp.CallToolRequest, t ToolSpec, argv []string, approve bool) *mcp.CallToolResult {
	logf, err := os.CreateTemp(s.opts.LogDir, t.Name+"-*.log")
	if err != nil {
		return refusal(t, errcode.Wrap(errcode.Internal, err, "creating the call's log in %s", s.opts.LogDir))
	}
	defer logf.Close()
	fmt.Fprintf(logf, "$ sponson %s\n", strings.Join(argv, " "))
	prog := NewProgressReader(func(p ProgressUpdate) {
		tok := req.Params.GetProgressToken()
		if tok == nil || req.Session == nil {
			return
		}
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Message: p.Message, Progress: p.Progress, Total: p.total})
	})
	cmd := exec.CommandContext(ctx, s.self, argv...)
	cmd.Env = s.childEnv(approve)
	// The keys go to the run on a pipe, never in its environment.
	passed, err := secrets.Pass(cmd)
	if err != nil {
		return refusal(t, errcode.Wrap(errcode.Internal, err, "handing the keys to the run"))
	}
	started, ended, err := passSteps(cmd, prog)
	if err != nil {
		passed()
		return refusal(t, errcode.Wrap(errcode.Internal, err, "creating the pipe of the run's progress"))
	}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = io.MultiWriter(logf, s.io.ErrOut)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = mcpInterruptGrace
	runErr := cmd.Start()
	passed()
	started()
	if runErr == nil {
		runErr = cmd.Wait()
	}
	ended()
	doc := bytes.TrimSpace(stdout.Bytes())
	var env cmdutil.Envelope
	if err := json.Unmarshal(doc, &env); err != nil || env.Command == "" {
		var b bytes.Buffer
		cmdutil.WriteEnvelope(&b, cmdutil.Outcome{Command: t.Command, Err: errcode.New(errcode.Internal, "sponson %s ended (%v) without its JSON document", t.Command, runErr).
			WithHint("Read the call's log: "+logf.Name()).With("log", logf.Name())})
		doc = bytes.TrimSpace(b.Bytes())
		env.OK = false
	}
	return &mcp.CallToolResult{
		Meta: mcp.Meta{"log": logf.Name()},
		Content: []mcp.Content{
			&mcp.TextContent{Text: string(doc)},
			&mcp.TextContent{Text: logTail(logf.Name(), logTailLines)},
		},
		StructuredContent: json.RawMessage(doc),
		IsError:           !env.OK,
	}
}

// childEnv is the environment of a tool's process: the server's, with the
// approver and engine of its flags, and no SPONSON_JSON (--json is passed).
func (s *mcpServer) childEnv(approve bool) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "SPONSON_JSON", "SPONSON_APPROVED_BY", "SPONSON_ENGINE", runctx.EnvActor:
			continue
		}
		env = append(env, kv)
	}
	if s.opts.ApprovedBy != "" && approve {
		env = append(env, "SPONSON_APPROVED_BY="+s.opts.ApprovedBy)
	}
	if s.opts.Engine != "" {
		env = append(env, "SPONSON_ENGINE="+s.opts.Engine)
	}
	env = append(env, runctx.EnvActor+"="+s.actor())
	return env
}

// actor is who the runs of this server are recorded as started by: its
// --actor, else "mcp:" and the user (or the CI actor) who started it.
func (s *mcpServer) actor() string {
	if a := strings.TrimSpace(s.opts.Actor); a != "" {
		return a
	}
	who := runctx.DetectJob(s.io.Getenv).Actor
	if who == "" {
		who = "unknown"
	}
	return "mcp:" + who
}

// logTail is the last n lines of the log at path, with its path.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("log %s: %v", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	head := fmt.Sprintf("output (full log: %s)", path)
	if len(lines) > n {
		head = fmt.Sprintf("last %d of %d lines of output (full log: %s)", n, len(lines), path)
		lines = lines[len(lines)-n:]
	}
	return head + "\n" + strings.Join(lines, "\n")
}
