// Package rootmodule reads the files of a root module the way the wrapper
// needs before the engine starts: its .tf and .tf.json files, in name order,
// parsed for their block structure only. Parse errors are not reported: a
// file is read as far as it parses, and the engine reports the errors in its
// own words.
package rootmodule

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// Files parses the configuration files of the root module in dir, except
// those named in skip, in name order.
func Files(dir string, skip ...string) ([]*hcl.File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	return FilesOf(dir, entries, skip...), nil
}

// FilesOf is Files of a directory whose entries the caller has read
// already (os.ReadDir), for a walk of many directories that reads each
// once (internal/stackgraph).
func FilesOf(dir string, entries []os.DirEntry, skip ...string) []*hcl.File {
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || slices.Contains(skip, n) || (!strings.HasSuffix(n, ".tf") && !strings.HasSuffix(n, ".tf.json")) {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	parser := hclparse.NewParser()
	var files []*hcl.File
	for _, n := range names {
		path := filepath.Join(dir, n)
		var f *hcl.File
		if strings.HasSuffix(n, ".json") {
			f, _ = parser.ParseJSONFile(path)
		} else {
			f, _ = parser.ParseHCLFile(path)
		}
		if f != nil && f.Body != nil {
			files = append(files, f)
		}
	}
	return files
}

// HasConfig reports whether dir holds a configuration file the engine
// reads (.tf, .tf.json, and OpenTofu's .tofu, .tofu.json), other than those
// named in skip. Both engines refuse to plan a directory with none.
func HasConfig(dir string, skip ...string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || slices.Contains(skip, n) {
			continue
		}
		for _, ext := range []string{".tf", ".tf.json", ".tofu", ".tofu.json"} {
			if strings.HasSuffix(n, ext) {
				return true, nil
			}
		}
	}
	return false, nil
}
