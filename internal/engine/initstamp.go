package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// InitStampFile is the file, in a scope's data directory, that records the
// configuration the directory was last initialised for.
const InitStampFile = "sponson-init.stamp"

// InitStamp hashes what decides whether a data directory initialised
// earlier is still current for the configuration in dir (docs/design.md
// §8: the engine starts only when needed). It covers the root module's
// files (provider requirements, module calls, backend block), the lock
// file, the module manifest init wrote and the files of every module it
// lists, the backend configuration init recorded, and extra: the engine
// binary and version, the user's CLI configuration files (their provider
// sources) and anything else the caller knows to matter. A missing file
// hashes as missing, so a file appearing or going away changes the stamp.
func InitStamp(dir, dataDir string, extra ...string) (string, error) {
	s := stamp{sha256.New()}
	manifest := filepath.Join(dataDir, "modules", "modules.json")
	if err := s.addModule("root", dir); err != nil {
		return "", err
	}
	for _, f := range []struct{ label, path string }{
		{"lock", filepath.Join(dir, ".terraform.lock.hcl")},
		{"backend", filepath.Join(dataDir, "terraform.tfstate")},
		{"modules", manifest},
	} {
		if err := s.addFile(f.label, f.path); err != nil {
			return "", err
		}
	}
	if err := s.addInstalledModules(dir, manifest); err != nil {
		return "", err
	}
	for _, e := range extra {
		fmt.Fprintf(s.h, "extra\x00%s\x00", e)
	}
	return hex.EncodeToString(s.h.Sum(nil)), nil
}

// stamp is an init stamp being hashed. Every part goes in under a label
// and ends in a NUL, so that moving bytes from one part to the next, or a
// file appearing or going away, changes the hash.
type stamp struct{ h hash.Hash }

func (s stamp) addMissing(label string) {
	fmt.Fprintf(s.h, "%s\x00missing\x00", label)
}

// addFile hashes the file at path, or that it is missing.
func (s stamp) addFile(label, path string) error {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		s.addMissing(label)
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(s.h, "%s\x00", label)
	_, err = io.Copy(s.h, f)
	s.h.Write([]byte{0})
	return err
}

// addModule hashes the configuration files of the module in mdir (only
// those decide what init installs), or that the module is missing.
func (s stamp) addModule(label, mdir string) error {
	entries, err := os.ReadDir(mdir)
	if os.IsNotExist(err) {
		s.addMissing(label)
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries { // ReadDir sorts by name
		n := e.Name()
		if e.IsDir() || (!strings.HasSuffix(n, ".tf") && !strings.HasSuffix(n, ".tf.json")) {
			continue
		}
		if err := s.addFile(label+"/"+n, filepath.Join(mdir, n)); err != nil {
			return err
		}
	}
	return nil
}

// addInstalledModules hashes every module the manifest at path lists, in
// key order.
func (s stamp) addInstalledModules(dir, path string) error {
	mods := installedModules(path)
	sort.Slice(mods, func(i, j int) bool { return mods[i].Key < mods[j].Key })
	for _, mod := range mods {
		if mod.Key == "" {
			continue // the root module, hashed on its own
		}
		if err := s.addModule("module "+mod.Key, mod.in(dir)); err != nil {
			return err
		}
	}
	return nil
}

// moduleManifest is the module manifest init writes (modules/modules.json
// in the data directory): each module call's key and where it is
// installed.
type moduleManifest struct {
	Modules []installedModule
}

type installedModule struct{ Key, Dir string }

// installedModules is what the manifest at path lists. An unreadable or
// malformed manifest lists none: its bytes are in the stamp already, and
// init is what will repair it.
func installedModules(path string) []installedModule {
	var m moduleManifest
	if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &m) == nil {
		return m.Modules
	}
	return nil
}

// in is the module's directory: the manifest's paths are relative to the
// configuration directory dir.
func (mod installedModule) in(dir string) string {
	if filepath.IsAbs(mod.Dir) {
		return mod.Dir
	}
	return filepath.Join(dir, mod.Dir)
}

// InitCurrent reports whether the data directory was initialised for stamp.
func InitCurrent(dataDir, stamp string) bool {
	b, err := os.ReadFile(filepath.Join(dataDir, InitStampFile))
	return err == nil && strings.TrimSpace(string(b)) == stamp
}

// ForgetInit removes the stamp, before an init that may fail half-way.
func ForgetInit(dataDir string) error {
	err := os.Remove(filepath.Join(dataDir, InitStampFile))
	if os.IsNotExist(err) {
		return nil
	}
	return err
}

// RecordInit writes stamp after a successful init.
func RecordInit(dataDir, stamp string) error {
	return os.WriteFile(filepath.Join(dataDir, InitStampFile), []byte(stamp+"\n"), 0o600)
}

// FileIdentity names a file by path, size and modification time, which
// changes when the file is replaced (a new engine binary).
func FileIdentity(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return path + "\x00missing"
	}
	return fmt.Sprintf("%s\x00%d\x00%d", path, fi.Size(), fi.ModTime().UnixNano())
}

// BorrowInit makes dst, a new data directory, initialised as src is: the
// backend configuration copied (the engine may rewrite it), the installed
// providers and modules linked, read-only for what a plan does.
func BorrowInit(src, dst string) error {
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(src, "terraform.tfstate"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dst, "terraform.tfstate"), b, 0o600); err != nil {
		return err
	}
	for _, sub := range []string{"providers", "modules"} {
		from := filepath.Join(src, sub)
		if _, err := os.Stat(from); os.IsNotExist(err) {
			continue
		}
		abs, err := filepath.Abs(from)
		if err != nil {
			return err
		}
		if err := os.Symlink(abs, filepath.Join(dst, sub)); err != nil {
			return err
		}
	}
	return nil
}

// CopyInit makes dst, a new data directory, initialised as src is, to keep
// (a new scope's data directory taking over a sibling's initialisation): the
// backend configuration copied, the installed providers and modules linked
// file by file (hard links, copies where the file system refuses them), so
// that neither directory's later init disturbs the other. It refuses a
// module manifest that names a module installed inside src (dir is the
// configuration directory the manifest's paths are relative to): dst would
// use src's copy.
func CopyInit(dir, src, dst string) error {
	if err := refuseModulesInside(dir, src); err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(src, "terraform.tfstate"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dst, "terraform.tfstate"), b, 0o600); err != nil {
		return err
	}
	for _, sub := range []string{"providers", "modules"} {
		from := filepath.Join(src, sub)
		if _, err := os.Lstat(from); os.IsNotExist(err) {
			continue
		}
		if err := linkTree(from, filepath.Join(dst, sub)); err != nil {
			return err
		}
	}
	return nil
}

// refuseModulesInside refuses a module manifest in src that names a module
// installed inside src: the copy would use src's module. A manifest src
// does not have (or cannot read) names none.
func refuseModulesInside(dir, src string) error {
	var m moduleManifest
	if b, err := os.ReadFile(filepath.Join(src, "modules", "modules.json")); err == nil {
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
	}
	for _, mod := range m.Modules {
		if rel, err := filepath.Rel(src, mod.in(dir)); err != nil || filepath.IsLocal(rel) {
			return fmt.Errorf("module %s is installed in %s", mod.Key, src)
		}
	}
	return nil
}

// linkTree recreates the tree from at to: directories made, symbolic links
// copied as links, files hard-linked (copied where linking fails).
func linkTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		target := filepath.Join(to, rel)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		}
		if os.Link(p, target) == nil {
			return nil
		}
		return copyFile(p, target)
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
