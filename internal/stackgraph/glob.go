package stackgraph

import (
	"path"
	"strings"
)

// globMatch reports whether the slash path name, or a directory above it,
// matches pattern: path.Match's syntax for each element, and "**" for any
// number of elements (none included), as Terraform's fileset and
// Terramate's watch read them. A directory matching means every file below
// it does: a watched or read directory is all its files.
func globMatch(pattern, name string) bool {
	return compileGlob(pattern).match(strings.Split(name, "/"))
}

// glob is a pattern split at "/", each element marked literal or not, as
// --changed matches every changed file against it.
type glob struct {
	elems []string
	meta  []bool
}

func compileGlob(pattern string) glob {
	g := glob{elems: strings.Split(pattern, "/")}
	for _, e := range g.elems {
		g.meta = append(g.meta, hasMeta(e))
	}
	return g
}

// match is globMatch of a name split at "/".
func (g glob) match(name []string) bool {
	// Most changed files differ from a pattern in its literal leading
	// elements: refuse them before trying every directory above them.
	for i := 0; i < len(g.elems) && i < len(name) && !g.meta[i]; i++ {
		if g.elems[i] != name[i] {
			return false
		}
	}
	for n := len(name); n > 0; n-- {
		if g.matchFrom(0, name[:n]) {
			return true
		}
	}
	return false
}

func (g glob) matchFrom(i int, name []string) bool {
	for i < len(g.elems) {
		if g.elems[i] == "**" {
			for i+1 < len(g.elems) && g.elems[i+1] == "**" {
				i++
			}
			if i+1 == len(g.elems) {
				return true
			}
			for k := range len(name) + 1 {
				if g.matchFrom(i+1, name[k:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if !g.meta[i] {
			if g.elems[i] != name[0] {
				return false
			}
		} else if ok, err := path.Match(g.elems[i], name[0]); err != nil || !ok {
			return false
		}
		i, name = i+1, name[1:]
	}
	return len(name) == 0
}

// hasMeta reports whether a glob element holds a wildcard or an escape.
func hasMeta(e string) bool { return strings.ContainsAny(e, `*?[\`) }

// escapeGlob is the glob that matches the path p alone.
func escapeGlob(p string) string {
	if !strings.ContainsAny(p, `*?[\`) {
		return p
	}
	var b strings.Builder
	for _, r := range p {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// globDir is the leading elements of a glob without wildcards: the
// directory it reads in.
func globDir(g string) (dir, rest string) {
	elems := strings.Split(g, "/")
	for i, e := range elems {
		if hasMeta(e) {
			return path.Join(elems[:i]...), path.Join(elems[i:]...)
		}
	}
	return g, ""
}
