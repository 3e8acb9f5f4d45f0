package wrapper

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/wrapper/runner"
	"github.com/sponson/terraform-provider-sponson/wrapper/statecmd"
)

func TestHCLValue(t *testing.T) {
	t.Parallel()
	var v any
	if err := json.Unmarshal([]byte(`{"b":[1,"x"],"a":{"n":null,"t":true}}`), &v); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"a\" = {\n    \"n\" = null\n    \"t\" = true\n  }\n  \"b\" = [\n    1,\n    \"x\",\n  ]\n}"
	if got := statecmd.HCLValue(v, ""); got != want {
		t.Errorf("hclValue:\n%s\nwant:\n%s", got, want)
	}
}

func TestWriteRaw(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{`"a b"`: "a b", `3.5`: "3.5", `true`: "true"} {
		var b bytes.Buffer
		if err := statecmd.WriteRaw(&b, "x", statecmd.Output{Value: json.RawMessage(raw)}); err != nil || b.String() != want {
			t.Errorf("-raw of %s = %q, %v", raw, b.String(), err)
		}
	}
	if err := statecmd.WriteRaw(&bytes.Buffer{}, "x", statecmd.Output{Value: json.RawMessage(`[1]`)}); errcode.ExitFor(err) != errcode.ExitRefused {
		t.Errorf("-raw of a list: %v", err)
	}
}

func TestStateOutputs(t *testing.T) {
	t.Parallel()
	got, err := runner.StateOutputs([]byte(`{"version":4,"outputs":{"u":{"value":"x","type":"string","sensitive":true}}}`))
	if err != nil || len(got) != 1 || !got["u"].Sensitive || string(got["u"].Value) != `"x"` {
		t.Errorf("%v %v", got, err)
	}
	if got, err := runner.StateOutputs(nil); err != nil || len(got) != 0 {
		t.Errorf("empty state: %v %v", got, err)
	}
}

func TestUnlockRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"unlock", "--scope", "pr-1", "--json"}, "--reason"},
		{[]string{"unlock", "--scope", "pr-1", "--reason", "  ", "--json"}, "--reason"},
		{[]string{"unlock", "--reason", "stuck", "--json"}, "--scope"},
		{[]string{"unlock", "--scope", "../x", "--reason", "stuck", "--json", "--chdir", t.TempDir()}, "scope"},
	} {
		f, out, _ := testFactory(nil)
		code := Run(context.Background(), tc.args, f)
		env := decode(t, out)
		if code != errcode.ExitRefused || env.Error == nil || !strings.Contains(env.Error.Message, tc.msg) {
			t.Errorf("%v: exit %d %+v", tc.args, code, env.Error)
		}
	}
}
