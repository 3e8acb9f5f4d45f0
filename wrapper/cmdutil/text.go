package cmdutil

import (
	"strings"

	"github.com/spf13/cobra"
)

func OrDot(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}

func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// OrDash shows an empty cell as "-" so that columns stay readable.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ShortCommit abbreviates a commit to 7 characters, as git shows it.
func ShortCommit(c string) string {
	if len(c) > 7 {
		return c[:7]
	}
	return c
}

func WantsJSON(args []string, getenv func(string) string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" || a == "--json=true" {
			return true
		}
		if a == "--json=false" {
			return false
		}
	}
	v := strings.ToLower(strings.TrimSpace(getenv("SPONSON_JSON")))
	return v == "1" || v == "true" || v == "yes"
}

// JSONWanted is --json on cmd, or SPONSON_JSON.
func JSONWanted(cmd *cobra.Command, getenv func(string) string) bool {
	j, _ := cmd.Flags().GetBool("json")
	return j || WantsJSON(nil, getenv)
}

// UnlessFailed is the outcome of command: err when a step before it
// failed, else what run gives. A command's RunE reports through its
// outcome and returns nil, so that cobra adds nothing of its own.
func UnlessFailed(command string, err error, run func() Outcome) Outcome {
	if err != nil {
		return Outcome{Command: command, Err: err}
	}
	return run()
}
