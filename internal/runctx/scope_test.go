package runctx

import (
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

func TestScopeFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		branch        string
		pr            int
		defaultBranch string
		want          string
	}{
		{"feat/search", 42, "main", "pr-42"},
		{"main", 42, "main", "pr-42"},
		{"", 1, "", "pr-1"},
		{"main", 0, "", "main"},
		{"master", 0, "", "main"},
		{"master", 0, "develop", "branch-master"},
		{"main", 0, "develop", "branch-main"},
		{"trunk", 0, "trunk", "main"},
		{"develop", 0, "develop", "main"},
		{"develop", 0, "", "branch-develop"},
		{"feat/search", 0, "main", "branch-feat-search"},
		{"Feat/Search", 0, "", "branch-Feat-Search"},
		{"Main", 0, "", "branch-Main"},
		{"main", -1, "", "main"},
	}
	for _, tc := range tests {
		if got := ScopeFor(tc.branch, tc.pr, tc.defaultBranch); got != tc.want {
			t.Errorf("ScopeFor(%q, %d, %q) = %q, want %q", tc.branch, tc.pr, tc.defaultBranch, got, tc.want)
		}
	}
}

func TestSanitize(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"feat/search":        "feat-search",
		"Feat/Search":        "Feat-Search",
		"a//b":               "a-b",
		"a / b":              "a-b",
		"/lead":              "-lead",
		"trail/":             "trail-",
		"keep._-chars09AZ":   "keep._-chars09AZ",
		"héllo wörld":        "h-llo-w-rld",
		"emoji-🚀-x":          "emoji---x",
		"..":                 "..",
		"a@{b}~c^d:e?f*g[h]": "a-b-c-d-e-f-g-h-",
		"\xff\xfe":           "-",
		"":                   "",
	}
	for in, want := range tests {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValidName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    string
		valid bool
	}{
		{"environment", "preview", true},
		{"production", "production", true},
		{"pr scope", "pr-42", true},
		{"main", "main", true},
		{"branch scope", "branch-feat-search", true},
		{"dot inside", "a.b", true},
		{"double dot inside", "x..y", true},
		{"mixed", "A_b-1", true},
		{"128 chars", strings.Repeat("a", 128), true},
		{"empty", "", false},
		{"dot", ".", false},
		{"dot dot", "..", false},
		{"hidden", ".hidden", false},
		{"slash", "a/b", false},
		{"traversal", "../etc", false},
		{"backslash", `a\b`, false},
		{"space", "a b", false},
		{"NUL", "a\x00b", false},
		{"non-ASCII", "é", false},
		{"newline", "pr-1\n", false},
		{"129 chars", strings.Repeat("a", 129), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := ValidName("environment", tc.in)
			if tc.valid {
				if err != nil {
					t.Fatalf("ValidName(%q) = %v, want nil", tc.in, err)
				}
				return
			}
			e := errcode.As(err)
			if e == nil || e.Code != errcode.Usage {
				t.Fatalf("ValidName(%q) = %v, want a USAGE error", tc.in, err)
			}
			for _, want := range []string{"environment", strconv.Quote(tc.in), "letters, digits"} {
				if !strings.Contains(e.Message, want) {
					t.Errorf("message %q does not mention %q", e.Message, want)
				}
			}
		})
	}
}

// TestBranchScopeUnique: a branch whose name loses characters to Sanitize,
// or is too long for a scope name, gets a scope of its own with a hash of
// the branch name; a plain branch keeps the name it always had (issue 52:
// feature/ÜBER#2 and feature/BER-2 shared branch-feature-BER-2).
func TestBranchScopeUnique(t *testing.T) {
	t.Parallel()
	for branch, want := range map[string]string{
		"feature/BER-2":          "branch-feature-BER-2",
		"feat/search":            "branch-feat-search",
		"release-1.2":            "branch-release-1.2",
		"feature/ÜBER#2":         "branch-feature-BER-2-487ace38",
		"fix//two  spaces":       "branch-fix-two-spaces-1756df84",
		"/lead":                  "branch--lead-075dbc0d",
		strings.Repeat("r", 150): "branch-" + strings.Repeat("r", 112) + "-45505276",
	} {
		got := BranchScope(branch)
		if got != want {
			t.Errorf("BranchScope(%q) = %q, want %q", branch, got, want)
		}
		if err := ValidName("scope", got); err != nil {
			t.Errorf("BranchScope(%q) = %q: %v", branch, got, err)
		}
	}
	a, b := strings.Repeat("r", 150)+"a", strings.Repeat("r", 150)+"b"
	if BranchScope(a) == BranchScope(b) {
		t.Errorf("two long branches that differ after the cut share %q", BranchScope(a))
	}
}

// TestBranchScopeProperties: every branch name gets a valid scope name,
// the same at every call, and two different branches share one only when
// both are plain (only scope-name characters and single '/') and differ in
// a '/' against a '-' (feature/x and feature-x), the one collision kept so
// that ordinary branches keep their scopes.
func TestBranchScopeProperties(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		alphabet := rapid.SampledFrom([]string{"a", "B", "1", ".", "_", "-", "/", "//", " ", "#", "Ü", "é"})
		gen := rapid.Custom(func(t *rapid.T) string {
			return strings.Join(rapid.SliceOfN(alphabet, 1, 80).Draw(t, "parts"), "")
		})
		x, y := gen.Draw(t, "x"), gen.Draw(t, "y")
		sx := BranchScope(x)
		if err := ValidName("scope", sx); err != nil {
			t.Fatalf("BranchScope(%q) = %q: %v", x, sx, err)
		}
		if BranchScope(x) != sx {
			t.Fatalf("BranchScope(%q) is not stable", x)
		}
		if x != y && sx == BranchScope(y) && (!plainBranch(x) || !plainBranch(y)) {
			t.Fatalf("%q and %q share scope %q", x, y, sx)
		}
	})
}
