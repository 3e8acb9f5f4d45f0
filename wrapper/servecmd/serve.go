// Package servecmd is `sponson serve`: the overview of the store, live and
// read-only, over HTTP (docs/design.md §4.8 "The overview").
package servecmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/overview"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

// DefaultAddr is where serve listens unless told: loopback only.
const DefaultAddr = "127.0.0.1:8385"

// ServeOptions are the options of `sponson serve`.
type ServeOptions struct {
	*cmdutil.IO
	cmdutil.StoreFlags
	cmdutil.GCFactFlags
	Addr  string
	Token string
}

// serveFlagEnv names the SPONSON_* variable of serve's own flags: the
// token is best not on a command line, which other users of the host see.
var serveFlagEnv = map[string]string{"token": "SPONSON_SERVE_TOKEN", "addr": "SPONSON_SERVE_ADDR"}

// NewCmdServe builds `sponson serve`.
func NewCmdServe(f *cmdutil.Factory, out *cmdutil.Outcome, runF func(context.Context, *ServeOptions) cmdutil.Outcome) *cobra.Command {
	opts := &ServeOptions{IO: f.IO()}
	cmd := &cobra.Command{
		Use:   "serve [--addr HOST:PORT] [--token TOKEN]",
		Short: "Serve the overview of the store, live and read-only, over HTTP",
		Long: `Serve answers with the page ` + "`sponson status --html`" + ` writes, read from the store
anew for every request: every environment, stack and scope, with owner, age,
last run, lease, what each owns, what gc would collect (--open-prs,
--older-than as for status) and drift (--drift FILE, read once at start). The page polls /overview.json, the same model
as JSON, and redraws itself when the store changed, without a reload.

It is read-only: it answers GET and HEAD alone (405 to anything else), has
no write path, and reads only what status reads (leases and receipts, never
a state or a secret).

It listens on --addr, ` + DefaultAddr + ` by default: loopback only. Any other
address (another interface, or all of them as ":8385") needs --token TOKEN
(env SPONSON_SERVE_TOKEN); every request must then carry it, as the header
"Authorization: Bearer TOKEN" (what a reverse proxy in front adds after its
own sign-in) or as ?token=TOKEN in the address. Without a token serve refuses
to start there (USAGE, exit 2). Serve stops on SIGINT or SIGTERM.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(f, out, opts, func(cmd *cobra.Command, _ []string) error {
			if err := cmdutil.BindEnv(cmd.Flags(), serveFlagEnv, opts.Getenv); err != nil {
				return err
			}
			if err := opts.Prepare(cmd, opts.Getenv); err != nil {
				return err
			}
			if !overview.Loopback(opts.Addr) && opts.Token == "" {
				return errcode.New(errcode.Usage, "serve --addr %s listens beyond loopback, and no --token was given", opts.Addr).
					WithHint("Give --token TOKEN (env SPONSON_SERVE_TOKEN), or listen on loopback (" + DefaultAddr + ") behind a reverse proxy.")
			}
			return nil
		}, runF, runServe),
	}
	opts.StoreFlags.Bind(cmd)
	opts.GCFactFlags.Bind(cmd)
	fs := cmd.Flags()
	fs.StringVar(&opts.Addr, "addr", DefaultAddr, "listen on `HOST:PORT` (env SPONSON_SERVE_ADDR); beyond loopback it needs --token")
	fs.StringVar(&opts.Token, "token", "", "the `TOKEN` every request must carry (env SPONSON_SERVE_TOKEN)")
	return cmd
}

// ServeResult is the result of `sponson serve --json`, when it stops.
type ServeResult struct {
	URL   string `json:"url"`
	Store string `json:"store"`
}

func runServe(ctx context.Context, opts *ServeOptions) cmdutil.Outcome {
	o := cmdutil.Outcome{Command: "serve"}
	st, url, _, err := opts.Open(ctx, opts.Getenv)
	if err != nil {
		o.Err = err
		return o
	}
	defer st.Close()
	in, err := cmdutil.OverviewInput(ctx, opts.Getenv, opts.Chdir, st, url, opts.GCFactFlags)
	if err != nil {
		o.Err = err
		return o
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", opts.Addr)
	if err != nil {
		o.Err = errcode.Wrap(errcode.Usage, err, "serve --addr %s", opts.Addr)
		return o
	}
	// A scope's timeline is read again only when its last run changed.
	in.Timelines = &overview.Timelines{}
	build := func(ctx context.Context) (*overview.Model, error) {
		in := in
		in.Now = time.Now()
		return overview.Build(ctx, in)
	}
	srv := &http.Server{Handler: overview.Handler(build, opts.Token), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	address := "http://" + ln.Addr().String() + "/"
	fmt.Fprintf(opts.Human(), "serving the overview of %s on %s (read-only; stop with Ctrl-C)\n", url, address)
	o.Result = ServeResult{URL: address, Store: url}
	select {
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			o.Err = errcode.Wrap(errcode.Usage, err, "serve on %s", strings.TrimSuffix(address, "/"))
		}
	}
	return o
}
