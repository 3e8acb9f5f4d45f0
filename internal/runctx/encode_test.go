package runctx

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

func TestEncodeFromEnvRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ctx  Context
	}{
		{"full", Context{
			Environment: "preview", Scope: "pr-42", Branch: "feat/search", PullRequest: 42, Commit: shaHead,
			DefaultBranch: "main", Predecessor: "branch-feat-search", Source: "github",
		}},
		{"minimal", Context{Environment: "production", Scope: "main"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			enc, err := tc.ctx.Encode()
			if err != nil {
				t.Fatal(err)
			}
			got, ok, err := FromEnv(func(k string) string {
				if k == EnvVar {
					return enc
				}
				return ""
			})
			if err != nil || !ok {
				t.Fatalf("FromEnv() = _, %v, %v; want ok", ok, err)
			}
			if diff := cmp.Diff(tc.ctx, got); diff != "" {
				t.Errorf("round trip mismatch (-want +got):\n%s", diff)
			}

			environ := tc.ctx.Environ()
			if len(environ) != 1 || environ[0] != EnvVar+"="+enc {
				t.Errorf("Environ() = %q, want [%s=%s]", environ, EnvVar, enc)
			}
		})
	}
}

func TestEncodeFieldNames(t *testing.T) {
	t.Parallel()
	enc, err := Context{Environment: "preview", Scope: "pr-1", PullRequest: 1}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"environment":"preview","scope":"pr-1","pullRequest":1}`; enc != want {
		t.Errorf("Encode() = %s, want %s", enc, want)
	}
}

func TestFromEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		value   string
		want    Context
		wantOK  bool
		wantErr errcode.Code
	}{
		{name: "unset"},
		{name: "blank", value: "  "},
		{
			name:   "unknown fields of a newer wrapper are ignored",
			value:  `{"environment":"preview","scope":"main","future":{"x":1}}`,
			want:   Context{Environment: "preview", Scope: "main"},
			wantOK: true,
		},
		{name: "not JSON", value: "pr-42", wantErr: errcode.Internal},
		{name: "wrong type", value: `{"environment":"preview","scope":"pr-1","pullRequest":"1"}`, wantErr: errcode.Internal},
		{name: "no scope", value: `{"environment":"preview"}`, wantErr: errcode.Internal},
		{name: "traversal in scope", value: `{"environment":"preview","scope":"../main"}`, wantErr: errcode.Internal},
		{name: "traversal in environment", value: `{"environment":"..","scope":"main"}`, wantErr: errcode.Internal},
		{name: "invalid predecessor", value: `{"environment":"preview","scope":"pr-1","predecessor":"a/b"}`, wantErr: errcode.Internal},
		{name: "negative PR", value: `{"environment":"preview","scope":"x","pullRequest":-1}`, wantErr: errcode.Internal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok, err := FromEnv(func(k string) string {
				if k == EnvVar {
					return tc.value
				}
				return ""
			})
			if tc.wantErr != "" {
				if !errcode.Is(err, tc.wantErr) {
					t.Fatalf("FromEnv() error = %v, want code %s", err, tc.wantErr)
				}
				if !strings.Contains(err.Error(), EnvVar) {
					t.Errorf("error %q does not name %s", err, EnvVar)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.wantOK {
				t.Errorf("FromEnv() ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("FromEnv() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShortCommit(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		shaHead:   "aaaaaaa",
		"0123456": "0123456",
		"abc":     "abc",
		"":        "",
	}
	for in, want := range tests {
		if got := (Context{Commit: in}).ShortCommit(); got != want {
			t.Errorf("ShortCommit() of %q = %q, want %q", in, got, want)
		}
	}
}
