package stackgraph

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/environments"
)

// watchDecl is one sponson.hcl's watch lists, read once for the set.
type watchDecl struct {
	file  string // relative to the repository's root
	watch map[string][]string
	err   error
}

// watchOf is the declaration that governs the stack in dir (the nearest
// sponson.hcl in dir or above it, up to the repository's root, as
// environments.Load finds it), nil without one. Each directory is looked
// at once and each file parsed once for the set.
func (s *Set) watchOf(dir string) *watchDecl {
	if w, ok := s.watches[dir]; ok {
		return w
	}
	var w *watchDecl
	file := path.Join(dir, environments.FileName)
	src, err := os.ReadFile(filepath.Join(s.top, filepath.FromSlash(file)))
	switch {
	case err == nil:
		w = &watchDecl{file: file}
		d, err := environments.Parse(src, file)
		w.watch, w.err = d.Watch, err
	case !errors.Is(err, fs.ErrNotExist):
		w = &watchDecl{file: file, err: err}
	case dir != ".":
		w = s.watchOf(path.Dir(dir))
	}
	s.watches[dir] = w
	return w
}

// globs are the watch globs of the stack in stackDir, relative to the
// repository's root, and whether the stack has a list of its own
// (stack "DIR" { watch = [...] }; for the stack at the declaration's own
// directory, the top-level list is its own). A glob that leads out of the
// repository is left out: no change of the repository touches it.
func (w *watchDecl) globs(stackDir string) (globs []string, own bool) {
	declDir := path.Dir(w.file)
	key := stackDir
	if declDir != "." {
		key = strings.TrimPrefix(strings.TrimPrefix(stackDir, declDir), "/")
	}
	if key == "." {
		key = ""
	}
	list := w.watch[""]
	if key != "" {
		list = append(append([]string{}, list...), w.watch[key]...)
	}
	_, own = w.watch[key]
	for _, g := range list {
		g = path.Join(declDir, filepath.ToSlash(g))
		if g == ".." || strings.HasPrefix(g, "../") {
			continue
		}
		globs = append(globs, g)
	}
	return globs, own
}
