package engine

import (
	"fmt"
	"regexp"
	"strings"
)

// The engine accepts one provider_installation block, and CLI configurations
// are HCL 1 (dev_overrides keys are quoted strings), which the HCL 2 parser
// cannot read. So a user's block is merged textually: its methods are kept,
// each told to exclude the sponson provider, and sponson's dev_overrides and
// mirror are added. The scanner below knows strings and comments, which is
// all that can hide a brace in such a file.

// span is a byte range [start, end) of the source.
type span struct{ start, end int }

// blockAt finds the block `name {` starting at or after from, at brace depth
// zero relative to from, and returns the ranges of the whole block and of its
// body (between the braces). ok is false when there is none.
func blockAt(src []byte, from int, name *regexp.Regexp) (whole, body span, ok bool) {
	depth := 0
	for i := from; i < len(src); {
		if j := skipNonCode(src, i); j != i {
			i = j
			continue
		}
		switch c := src[i]; {
		case c == '{':
			depth++
		case c == '}':
			depth--
			if depth < 0 {
				return span{}, span{}, false
			}
		case depth == 0 && (i == from || !isIdent(src[i-1])):
			if loc := name.FindIndex(src[i:]); loc != nil && loc[0] == 0 {
				open := i + loc[1] - 1 // the regexp ends at the brace
				end := matchBrace(src, open)
				if end < 0 {
					return span{}, span{}, false
				}
				return span{i, end + 1}, span{open + 1, end}, true
			}
		}
		i++
	}
	return span{}, span{}, false
}

func isIdent(c byte) bool {
	return c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func matchBrace(src []byte, open int) int {
	depth := 0
	for i := open; i < len(src); {
		if j := skipNonCode(src, i); j != i {
			i = j
			continue
		}
		switch src[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i
			}
		}
		i++
	}
	return -1
}

// skipNonCode returns the index right after the string or comment that
// starts at i, or i itself when none starts there: braces inside them do not
// count.
func skipNonCode(src []byte, i int) int {
	switch c := src[i]; {
	case c == '"':
		return skipString(src, i)
	case c == '#' || (c == '/' && i+1 < len(src) && src[i+1] == '/'):
		return skipLine(src, i)
	case c == '/' && i+1 < len(src) && src[i+1] == '*':
		return skipBlockComment(src, i)
	}
	return i
}

func skipString(src []byte, i int) int {
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(src)
}

func skipLine(src []byte, i int) int {
	for j := i; j < len(src); j++ {
		if src[j] == '\n' {
			return j + 1
		}
	}
	return len(src)
}

func skipBlockComment(src []byte, i int) int {
	for j := i + 2; j+1 < len(src); j++ {
		if src[j] == '*' && src[j+1] == '/' {
			return j + 2
		}
	}
	return len(src)
}

var (
	piBlock     = regexp.MustCompile(`^provider_installation\s*\{`)
	methodBlock = regexp.MustCompile(`^(dev_overrides|direct|filesystem_mirror|network_mirror)\s*\{`)
	excludeAttr = regexp.MustCompile(`(?m)^\s*exclude\s*=\s*\[`)
)

// mergeProviderInstallation returns the user's configuration with sponson's
// provider installation merged into its provider_installation block (or
// added when it has none). ours holds the dev_overrides entries, the mirror
// path and the sources to exclude from every other method.
func mergeProviderInstallation(user []byte, plugins, mirror string, sources []string) []byte {
	var overrides strings.Builder
	for _, s := range sources {
		fmt.Fprintf(&overrides, "    %q = %q\n", s, plugins)
	}
	excl := quoteList(sources)
	ourMirror := fmt.Sprintf("  filesystem_mirror {\n    path    = %q\n    include = [%s]\n  }\n", mirror, excl)

	whole, body, ok := blockAt(user, 0, piBlock)
	if !ok {
		var b strings.Builder
		b.Write(user)
		if len(user) > 0 && user[len(user)-1] != '\n' {
			b.WriteByte('\n')
		}
		b.WriteString("# Added by sponson for one run.\nprovider_installation {\n  dev_overrides {\n")
		b.WriteString(overrides.String())
		b.WriteString("  }\n")
		b.WriteString(ourMirror)
		fmt.Fprintf(&b, "  direct {\n    exclude = [%s]\n  }\n}\n", excl)
		return []byte(b.String())
	}

	inner := user[body.start:body.end]
	var methods strings.Builder
	var userOverrides string
	for pos := 0; ; {
		w, bd, found := blockAt(inner, pos, methodBlock)
		if !found {
			break
		}
		kind := methodBlock.FindSubmatch(inner[w.start:])[1]
		content := string(inner[bd.start:bd.end])
		if string(kind) == "dev_overrides" {
			userOverrides += content
		} else {
			// Every other method must leave the sponson provider to the
			// mirror: the first method that includes a provider wins.
			if loc := excludeAttr.FindStringIndex(content); loc != nil {
				content = content[:loc[1]] + excl + ", " + content[loc[1]:]
			} else {
				content = "\n    exclude = [" + excl + "]" + content
			}
			fmt.Fprintf(&methods, "  %s {%s}\n", kind, content)
		}
		pos = w.end
	}
	var b strings.Builder
	b.Write(user[:whole.start])
	b.WriteString("provider_installation {\n  # sponson's own provider, added for one run\n  dev_overrides {\n")
	b.WriteString(overrides.String())
	if strings.TrimSpace(userOverrides) != "" {
		b.WriteString("    " + strings.TrimSpace(userOverrides) + "\n")
	}
	b.WriteString("  }\n")
	b.WriteString(ourMirror)
	b.WriteString(methods.String())
	b.WriteString("}")
	b.Write(user[whole.end:])
	return []byte(b.String())
}
