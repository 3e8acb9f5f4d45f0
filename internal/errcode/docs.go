package errcode

import (
	"fmt"
	"strings"
)

//go:generate go run ./gendocs ../../docs/errors.md

// Markdown renders the error reference from the table. docs/errors.md is
// this text; a test fails when it is stale.
func Markdown() string {
	var b strings.Builder
	b.WriteString("# Error codes\n\n")
	b.WriteString("<!-- Generated from internal/errcode by `make generate`; do not edit. -->\n\n")
	b.WriteString("Every failure of `sponson` carries one of these codes, in the `error.code` field of the `--json`\n")
	b.WriteString("document and on the `error` line of the human output. The exit code follows from the code:\n")
	b.WriteString("`0` ok, `1` failed, `2` refused before running, `3` the scope's lease is held or was lost.\n\n")
	b.WriteString("| code | exit | meaning | what to do |\n| --- | --- | --- | --- |\n")
	for _, s := range Table() {
		fmt.Fprintf(&b, "| `%s` | %d | %s | %s |\n", s.Code, s.Exit, escape(s.Meaning), escape(s.Hint))
	}
	return b.String()
}

func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
