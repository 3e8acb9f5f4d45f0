package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"
	testing "github.com/mitchellh/go-testing-interface"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/storeurl"
)

// ReattachEnvVar is the variable through which the engine finds providers
// that are already running (its "unmanaged" providers).
const ReattachEnvVar = "TF_REATTACH_PROVIDERS"

// ReattachHosts are the registry hosts under which configurations name the
// provider: `sponson/sponson` means registry.opentofu.org under OpenTofu and
// registry.terraform.io under Terraform. The reattach configuration names
// both.
var ReattachHosts = []string{"registry.opentofu.org", "registry.terraform.io"}

// InProcess is the provider served from the wrapper's own process to the
// engine commands of one run (docs/design.md §7.2). The engine attaches to it
// through TF_REATTACH_PROVIDERS instead of starting a provider process per
// command, so nothing is installed for it, the lock file gets no entry for
// it, and the engine prints no development-override warning.
type InProcess struct {
	reattach plugin.ReattachConfig
	cancel   context.CancelFunc
	closed   chan struct{}
}

// ServeInProcess starts serving the provider on a private socket. dir is the
// configuration directory, where the provider would have been started by
// the engine: its embedded store and its detection of the run context (both
// only used without a hand-over from the wrapper) start there. The provider
// reads the wrapper's hand-over from the process environment, which is the
// engine's (engine.Open sets it). Close stops it.
//
// states is the run's own store, opened by the wrapper: sponson_outputs reads
// other stacks' states through it, with the state key the wrapper read
// before it scrubbed the key from the environment (nil: the provider opens
// the store the hand-over names).
func ServeInProcess(ctx context.Context, version, dir string, states StateReader) (*InProcess, error) {
	p := &sponsonProvider{version: version, resolver: processResolver{dir: dir}, getenv: os.Getenv,
		openStore: storeurl.Open, now: time.Now, workDir: dir, states: states}
	server := providerserver.NewProtocol6(p)
	ctx, cancel := context.WithCancel(ctx)
	configs := make(chan *plugin.ReattachConfig, 1)
	closed := make(chan struct{})
	served := make(chan error, 1)
	go func() {
		served <- tf6server.Serve(Address, server,
			tf6server.WithDebug(ctx, configs, closed),
			tf6server.WithGoPluginLogger(hclog.NewNullLogger()),
			// The provider logs as the engine's own logs do: by TF_LOG and
			// TF_LOG_PATH, and not at all when TF_LOG is unset.
			tf6server.WithLoggingSink(&testing.RuntimeT{}),
			tf6server.WithoutLogStderrOverride())
	}()
	select {
	case c := <-configs:
		return &InProcess{reattach: *c, cancel: cancel, closed: closed}, nil
	case err := <-served:
		cancel()
		if err == nil {
			err = errors.New("the provider server stopped before it listened")
		}
		return nil, fmt.Errorf("serving the provider in process: %w", err)
	}
}

// Environ is the engine's TF_REATTACH_PROVIDERS: the provider under both
// hosts, merged into the value the user had set (reattaching a provider of
// their own while debugging it), given as current.
func (s *InProcess) Environ(current string) (string, error) {
	entries := map[string]json.RawMessage{}
	if current != "" {
		if err := json.Unmarshal([]byte(current), &entries); err != nil {
			return "", fmt.Errorf("%s is not a JSON object of reattach configurations: %w", ReattachEnvVar, err)
		}
	}
	own, err := json.Marshal(reattachConfig{
		Protocol:        string(s.reattach.Protocol),
		ProtocolVersion: s.reattach.ProtocolVersion,
		Pid:             s.reattach.Pid,
		Test:            true,
		Addr:            reattachAddr{Network: s.reattach.Addr.Network(), String: s.reattach.Addr.String()},
	})
	if err != nil {
		return "", err
	}
	for _, host := range ReattachHosts {
		entries[host+"/sponson/sponson"] = own
	}
	b, err := json.Marshal(entries)
	return string(b), err
}

// Close stops the server and waits until it has.
func (s *InProcess) Close() {
	s.cancel()
	<-s.closed
}

// reattachConfig is one entry of TF_REATTACH_PROVIDERS, as the engines read
// it. Test makes the engine leave the server running when a command ends,
// for the next command of the run.
type reattachConfig struct {
	Protocol        string
	ProtocolVersion int
	Pid             int
	Test            bool
	Addr            reattachAddr
}

type reattachAddr struct {
	Network string
	String  string
}

// EngineEnv serves the provider from this process to one run's engine
// (ServeInProcess) and returns the engine's variable that names it
// (TF_REATTACH_PROVIDERS, merged with the user's) and the function that
// stops it. The wrapper hands it to the packages that start the engine
// (scoperun.Options.ServeProvider, adopt.Options.ServeProvider), which do
// not import the provider; engine.WithProvider adds what every engine
// session needs besides.
func EngineEnv(ctx context.Context, version, dir string, states StateReader) (env []string, stop func(), err error) {
	srv, err := ServeInProcess(ctx, version, dir, states)
	if err != nil {
		return nil, nil, errcode.Wrap(errcode.Internal, err, "serving the provider to the engine")
	}
	reattach, err := srv.Environ(os.Getenv(ReattachEnvVar))
	if err != nil {
		srv.Close()
		return nil, nil, errcode.Wrap(errcode.Usage, err, "reading %s", ReattachEnvVar).
			WithHint("Unset it, or set it to the JSON the provider you debug printed.")
	}
	return []string{ReattachEnvVar + "=" + reattach}, srv.Close, nil
}
