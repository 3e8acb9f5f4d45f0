package wrapper

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/wrapper/cmdutil"
)

func mirrorFactory(t *testing.T, bin string) (*cmdutil.Factory, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	var out, errOut bytes.Buffer
	return &cmdutil.Factory{
		Out: &out, ErrOut: &errOut,
		Getenv:     func(string) string { return "" },
		Executable: func() (string, error) { return bin, nil },
	}, &out, &errOut
}

// TestProviderMirrorCommand: the command mirrors the binary Executable
// names and prints the hashes and the CLI configuration, in both modes.
func TestProviderMirrorCommand(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "sponson")
	if err := os.WriteFile(bin, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "mirror")

	f, out, _ := mirrorFactory(t, bin)
	if code := Run(context.Background(), []string{"provider", "mirror", dir}, f); code != errcode.ExitOK {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{"h1:", "zh:", "provider_installation {", `path    = "` + dir + `"`, "registry.terraform.io/sponson/sponson/terraform-provider-sponson_"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	f, out, _ = mirrorFactory(t, bin)
	if code := Run(context.Background(), []string{"provider", "mirror", dir, "--json"}, f); code != errcode.ExitOK {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	var env cmdutil.Envelope
	if err := json.Unmarshal(out.Bytes(), &env); err != nil || env.Command != "provider mirror" {
		t.Fatalf("envelope %+v (%v):\n%s", env, err, out)
	}
}

func TestProviderMirrorUnwritable(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "sponson")
	if err := os.WriteFile(bin, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A file where the mirror directory should be: even root cannot write
	// under it.
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f, out, _ := mirrorFactory(t, bin)
	code := Run(context.Background(), []string{"provider", "mirror", filepath.Join(blocker, "mirror"), "--json"}, f)
	if code != errcode.ExitFailed || !strings.Contains(out.String(), `"MIRROR_FAILED"`) {
		t.Errorf("exit %d, want 1 with MIRROR_FAILED:\n%s", code, out)
	}
}

func TestProviderMirrorNeedsDir(t *testing.T) {
	t.Parallel()
	f, out, _ := mirrorFactory(t, "/nonexistent")
	if code := Run(context.Background(), []string{"provider", "mirror", "--json"}, f); code != errcode.ExitRefused || !strings.Contains(out.String(), `"USAGE"`) {
		t.Errorf("exit %d, want 2 with USAGE:\n%s", code, out)
	}
}
