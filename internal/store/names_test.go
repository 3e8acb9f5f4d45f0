package store

import (
	"regexp"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

func TestCheckName(t *testing.T) {
	t.Parallel()
	for name, ok := range map[string]bool{
		"pr-42": true, "main": true, "branch-feat-search": true, "branch-v1.2_rc": true, "A..b": true,
		strings.Repeat("x", 128): true,
		"":                       false, ".": false, "..": false, ".hidden": false, ".mutex": false, "a/b": false, `a\b`: false,
		"a b": false, "é": false, "a\nb": false, "pr-1\n": false, strings.Repeat("x", 129): false,
	} {
		err := CheckName("scope", name)
		if (err == nil) != ok {
			t.Errorf("CheckName(%q) = %v, want ok=%v", name, err, ok)
		}
		if err != nil && !errcode.Is(err, errcode.Usage) {
			t.Errorf("CheckName(%q) = %v, want USAGE", name, err)
		}
	}
}

// TestPlainCharsIsTheClass: the loops that replaced the regular expressions
// of names accept exactly what those accepted.
func TestPlainCharsIsTheClass(t *testing.T) {
	t.Parallel()
	segmentRe := regexp.MustCompile(`^[a-zA-Z0-9._-]{1,128}$`)
	stackRe := regexp.MustCompile(`^[a-zA-Z0-9._/-]{1,200}$`)
	rapid.Check(t, func(t *rapid.T) {
		alphabet := rapid.SampledFrom([]rune("aZ09._-/ \n\x00éé_\\"))
		n := rapid.IntRange(0, 210).Draw(t, "n")
		s := string(rapid.SliceOfN(alphabet, n, n).Draw(t, "s"))
		if got, want := segment(s), segmentRe.MatchString(s); got != want {
			t.Fatalf("segment(%q) = %v, the expression says %v", s, got, want)
		}
		if got, want := stackChars(s), stackRe.MatchString(s); got != want {
			t.Fatalf("stackChars(%q) = %v, the expression says %v", s, got, want)
		}
	})
}
