package stackgraph

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// maxLinkHops bounds the symbolic links followed for one path, as the
// kernel's ELOOP does (40 on Linux).
const maxLinkHops = 40

// real is the slash path rel (relative to the repository's root) with
// every symbolic link in it followed, relative to the root ("../..." when
// a link leads outside). A link whose target does not exist still leads to
// it: a pull request that deletes a link's target changes what the link
// reads. Results are kept for the set.
func (s *Set) real(rel string) string {
	if r, ok := s.reals[rel]; ok {
		return r
	}
	r := s.follow(rel, 0)
	s.reals[rel] = r
	return r
}

func (s *Set) follow(rel string, hops int) string {
	if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || hops > maxLinkHops {
		return rel
	}
	dir := s.follow(path.Dir(rel), hops)
	p := path.Join(dir, path.Base(rel))
	abs := filepath.Join(s.top, filepath.FromSlash(p))
	fi, err := os.Lstat(abs)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return p
	}
	target, err := os.Readlink(abs)
	if err != nil {
		return p
	}
	if filepath.IsAbs(target) {
		r, err := filepath.Rel(s.top, target)
		if err != nil {
			return p
		}
		return s.follow(filepath.ToSlash(r), hops+1)
	}
	return s.follow(path.Join(dir, filepath.ToSlash(target)), hops+1)
}

// walkedAbove reports whether d or a directory above it is in walked: its
// ancestors are looked up, not every walked directory compared (10,000
// stacks are 10,000 directories).
func walkedAbove(walked map[string]bool, d string) bool {
	for {
		if walked[d] || walked["."] {
			return true
		}
		parent := path.Dir(d)
		if parent == d || d == "." {
			return false
		}
		d = parent
	}
}

// links are the symbolic links under the repository directories dirs
// (relative, slash-separated), hidden directories and node_modules left
// out as Discover leaves them: each directory is walked once, a directory
// under another of dirs not again.
func (s *Set) links(dirs []string) []string {
	sort.Strings(dirs)
	var out []string
	walked := map[string]bool{}
	for _, d := range dirs {
		if walkedAbove(walked, d) {
			continue
		}
		walked[d] = true
		root := filepath.Join(s.top, filepath.FromSlash(d))
		_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return filepath.SkipDir // unreadable: the engine reports what it cannot read
			}
			if e.Type()&fs.ModeSymlink != 0 {
				if rel, err := filepath.Rel(s.top, p); err == nil {
					out = append(out, filepath.ToSlash(rel))
				}
				return nil
			}
			if e.IsDir() && p != root && (strings.HasPrefix(e.Name(), ".") || e.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		})
	}
	return out
}
