package stackgraph

import "sort"

// NotStacks are the directories discovery read that hold configuration
// files, declare no sponson_scope, and that no directory read uses as a
// local module: root modules that are not stacks (a monorepo being
// migrated), which a run of every stack leaves out and names
// (docs/design.md §4.7 "Many stacks"). Directories relative to the
// repository root, sorted.
func (s *Set) NotStacks() []string {
	used := map[string]bool{}
	for dir, d := range s.decls {
		for _, src := range d.modules {
			used[moduleDir(dir, src)] = true
		}
	}
	var out []string
	for dir, d := range s.decls {
		if d.hasFiles && !d.isStack && !used[dir] {
			out = append(out, dir)
		}
	}
	sort.Strings(out)
	return out
}
