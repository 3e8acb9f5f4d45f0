package store

import (
	"strings"
	"testing"

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
