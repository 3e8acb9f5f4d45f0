package stackgraph

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Removed is the subset of base (the stacks of the base revision, discovered
// in a checkout of it) whose names current (the stacks of HEAD) no longer
// has: a directory the change deleted or moved, or a root module that lost
// its sponson_scope. Their state in the store has no configuration left on
// HEAD, so a run of the changed stacks destroys them from the base's
// configuration (docs/design.md §4.7 "Many stacks", removed stacks). Each carries its
// reason; a stack of current that base did not have and whose configuration
// files are those of a removed one, byte for byte, is its new directory
// (RenamedTo). The order is that of the subset: a removed stack's upstreams
// among the removed come before it, and destroying goes in reverse.
func (base *Set) Removed(current *Set) *Set {
	names := map[string]bool{}
	for _, st := range current.Stacks {
		names[st.Name] = true
	}
	was := map[string]bool{}
	for _, st := range base.Stacks {
		was[st.Name] = true
	}
	out := &Set{top: base.top, decls: base.decls, reals: base.reals, watches: base.watches}
	for _, st := range base.Stacks {
		if names[st.Name] {
			continue
		}
		c := *st
		c.Needs = slices.Clone(st.Needs)
		// What the engine and sponson write (.terraform/, .sponson/, an
		// ignored lock file) may stay behind in a deleted directory.
		if len(configFiles(filepath.Join(current.top, filepath.FromSlash(st.Directory)))) == 0 {
			c.Reasons = []string{"removed: its directory " + st.Directory + " was deleted"}
		} else {
			c.Reasons = []string{"removed: " + st.Directory + " is no longer a stack named " + st.Name}
		}
		for _, now := range current.Stacks {
			if !was[now.Name] && sameConfiguration(st.Dir, now.Dir) {
				c.RenamedTo = now.Name
				c.RenamedDirectory = now.Directory
				c.Reasons = append(c.Reasons, fmt.Sprintf("renamed: its configuration moved to %s (stack %s)", now.Directory, now.Name))
				break
			}
		}
		out.Stacks = append(out.Stacks, &c)
	}
	_ = out.order() // a subset of an acyclic set is acyclic
	return out
}

// sameConfiguration reports whether two directories hold the same
// configuration files (.tf, .tf.json, .tofu), byte for byte: a stack whose
// directory moved with nothing else changed, as git's rename detection
// would find it.
func sameConfiguration(a, b string) bool {
	fa, fb := configFiles(a), configFiles(b)
	if len(fa) == 0 || len(fa) != len(fb) {
		return false
	}
	for name, data := range fa {
		if other, ok := fb[name]; !ok || !bytes.Equal(data, other) {
			return false
		}
	}
	return true
}

func configFiles(dir string) map[string][]byte {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := map[string][]byte{}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".tf") && !strings.HasSuffix(n, ".tf.json") && !strings.HasSuffix(n, ".tofu") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil
		}
		out[n] = data
	}
	return out
}
