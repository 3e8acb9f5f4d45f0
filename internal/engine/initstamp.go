package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
	h := sha256.New()
	add := func(label, path string) error {
		f, err := os.Open(path)
		if os.IsNotExist(err) {
			fmt.Fprintf(h, "%s\x00missing\x00", label)
			return nil
		}
		if err != nil {
			return err
		}
		defer f.Close()
		fmt.Fprintf(h, "%s\x00", label)
		_, err = io.Copy(h, f)
		h.Write([]byte{0})
		return err
	}
	addModule := func(label, mdir string) error {
		entries, err := os.ReadDir(mdir)
		if os.IsNotExist(err) {
			fmt.Fprintf(h, "%s\x00missing\x00", label)
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
			if err := add(label+"/"+n, filepath.Join(mdir, n)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := addModule("root", dir); err != nil {
		return "", err
	}
	if err := add("lock", filepath.Join(dir, ".terraform.lock.hcl")); err != nil {
		return "", err
	}
	if err := add("backend", filepath.Join(dataDir, "terraform.tfstate")); err != nil {
		return "", err
	}
	manifest := filepath.Join(dataDir, "modules", "modules.json")
	if err := add("modules", manifest); err != nil {
		return "", err
	}
	if b, err := os.ReadFile(manifest); err == nil {
		var m struct {
			Modules []struct{ Key, Dir string }
		}
		if json.Unmarshal(b, &m) == nil {
			sort.Slice(m.Modules, func(i, j int) bool { return m.Modules[i].Key < m.Modules[j].Key })
			for _, mod := range m.Modules {
				if mod.Key == "" {
					continue // the root module, hashed above
				}
				mdir := mod.Dir
				if !filepath.IsAbs(mdir) {
					mdir = filepath.Join(dir, mdir)
				}
				if err := addModule("module "+mod.Key, mdir); err != nil {
					return "", err
				}
			}
		}
	}
	for _, e := range extra {
		fmt.Fprintf(h, "extra\x00%s\x00", e)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
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
	if b, err := os.ReadFile(filepath.Join(src, "modules", "modules.json")); err == nil {
		var m struct {
			Modules []struct{ Key, Dir string }
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		for _, mod := range m.Modules {
			mdir := mod.Dir
			if !filepath.IsAbs(mdir) {
				mdir = filepath.Join(dir, mdir)
			}
			if rel, err := filepath.Rel(src, mdir); err != nil || !strings.HasPrefix(rel, "..") {
				return fmt.Errorf("module %s is installed in %s", mod.Key, src)
			}
		}
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
