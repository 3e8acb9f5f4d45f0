package summary

import (
	"fmt"
	"strings"
)

// Output is one root module output of the scope after a run, as its
// summary shows it: the one place a summary shows values, because the
// preview's address is the first thing a reviewer wants. Sensitive outputs
// are named, never shown.
type Output struct {
	Name string
	// Value is a string output's text, or any other value's compact JSON;
	// empty when Sensitive.
	Value     string
	Sensitive bool
}

// maxOutputValue bounds one value in the summary; a longer one is cut and
// says so (`sponson output NAME` prints it whole).
const maxOutputValue = 300

// outputLines is the table of the scope's outputs, the preview's address
// first as a link.
func (r Run) outputLines() []string {
	var out []string
	if r.PreviewURL != "" {
		out = append(out, fmt.Sprintf("\n**Preview:** [%s](%s)\n", text(r.PreviewURL), linkTarget(r.PreviewURL)))
	}
	if len(r.Outputs) == 0 {
		return out
	}
	out = append(out, "\n**Outputs of the scope**\n\n| output | value |\n| --- | --- |\n")
	for _, o := range r.Outputs {
		v := inline(o.Value)
		switch {
		case o.Sensitive:
			v = text(Redacted)
		case len(o.Value) > maxOutputValue:
			v = inline(cutUTF8(o.Value, maxOutputValue)+"…") + " (cut; `sponson output " + strings.ReplaceAll(o.Name, "`", "") + "` prints it whole)"
		}
		out = append(out, fmt.Sprintf("| %s | %s |\n", cell(o.Name), strings.ReplaceAll(v, "|", `\|`)))
	}
	return out
}

// cutUTF8 cuts s to at most n bytes without splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
