// Package planset is the directory `sponson plan --all|--changed -out DIR`
// writes and `sponson apply DIR` applies: one saved plan per stack
// (internal/savedplan, each sealed on its own) and a manifest that lists
// them in dependency order with each file's digest, sealed like a saved
// plan (docs/design.md §4.2 "Saved plans").
//
// The manifest is written last, once every stack planned: a directory
// without one is a plan of many stacks that did not finish, and is refused.
// The apply checks the manifest's seal and every file's digest before any
// stack runs, so that a plan swapped, added or removed after the review is
// refused whole; each stack's own apply then refuses its plan when it went
// stale, as a single saved plan is.
package planset

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/savedplan"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Format is the first line of the manifest this build writes and the only
// one it reads.
const Format = "sponson-plans/1"

// ManifestName is the manifest's file name in the directory.
const ManifestName = "sponson-plans"

// Manifest lists the stacks' saved plans in the order they apply.
type Manifest struct {
	Sponson   string    `json:"sponson"`
	CreatedAt time.Time `json:"createdAt"`
	// Which is the selection that planned them (--all, or --changed and
	// its base) and Commit the commit it planned.
	Which  string  `json:"which"`
	Commit string  `json:"commit,omitempty"`
	Stacks []Entry `json:"stacks"`
}

// Entry is one stack's saved plan.
type Entry struct {
	Stack     string   `json:"stack"`
	Directory string   `json:"directory"`
	Depth     int      `json:"depth"`
	Needs     []string `json:"needs"`
	// File is the plan's file name in the directory, Digest its SHA-256.
	File   string `json:"file"`
	Digest string `json:"digest"`
}

// File is the name of the saved plan of the stack in directory (relative
// to the repository's root): one flat name per stack.
func File(directory string) string {
	return store.StackSegment(directory) + ".tfplan"
}

// Prepare makes dir ready for a plan of many stacks: created if missing,
// refused when it holds anything (an older plan's files would mix with
// this one's).
func Prepare(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return errcode.Wrap(errcode.Usage, err, "-out %s: cannot create the directory", dir)
		}
		return nil
	case err != nil:
		if fi, serr := os.Stat(dir); serr == nil && !fi.IsDir() {
			return errcode.New(errcode.Usage, "-out %s is a file; with --all or --changed -out names a directory for every stack's plan", dir).
				WithHint("Name a new directory, e.g. -out plans/.")
		}
		return errcode.Wrap(errcode.Usage, err, "-out %s", dir)
	case len(entries) > 0:
		return errcode.New(errcode.Usage, "-out %s is not empty; a plan of many stacks writes a directory of its own", dir).
			WithHint("Remove the directory, or name a new one.")
	}
	return nil
}

// IsSet reports whether path is a directory (a plan of many stacks) rather
// than a file: what `apply PATH` applies.
func IsSet(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// Write computes each entry's digest from its file in dir and writes the
// sealed manifest, atomically, mode 0600.
func Write(dir string, m *Manifest, key []byte) error {
	for i := range m.Stacks {
		d, err := digest(filepath.Join(dir, m.Stacks[i].File))
		if err != nil {
			return errcode.Wrap(errcode.Internal, err, "the saved plan of %s", m.Stacks[i].Directory)
		}
		m.Stacks[i].Digest = d
	}
	body, err := json.Marshal(m)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "encoding the manifest of the plans")
	}
	var b bytes.Buffer
	b.WriteString(Format + "\n")
	b.Write(body)
	b.WriteString("\n")
	b.WriteString("seal " + savedplan.Seal(b.Bytes(), key) + "\n")
	return savedplan.WritePrivate(filepath.Join(dir, ManifestName), b.Bytes())
}

// Read loads dir's manifest, checks its seal and every plan file's digest.
// Anything wrong is PLAN_CORRUPT: nothing of a damaged set is applied.
func Read(dir string, key []byte) (*Manifest, error) {
	bad := func(format string, args ...any) *errcode.Error {
		return errcode.New(errcode.PlanCorrupt, "%s: "+format, append([]any{dir}, args...)...)
	}
	data, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, bad("no %s manifest: the plan of many stacks that wrote it did not finish (a stack failed or it was stopped)", ManifestName).
			WithHint("Plan again with -out into a new directory.")
	}
	if err != nil {
		return nil, errcode.Wrap(errcode.Usage, err, "cannot read the plans in %s", dir)
	}
	if !bytes.HasPrefix(data, []byte(Format+"\n")) {
		return nil, bad("the manifest is not a sponson plan of many stacks (it does not start with %q)", Format)
	}
	signed, got, ok := savedplan.SplitSeal(data)
	if !ok {
		return nil, bad("the manifest is truncated (no seal at its end)")
	}
	if err := savedplan.CheckSeal(signed, got, key); err != nil {
		return nil, bad("the manifest %v", err)
	}
	var m Manifest
	if err := json.Unmarshal(signed[len(Format)+1:len(signed)-1], &m); err != nil {
		return nil, errcode.Wrap(errcode.PlanCorrupt, err, "%s: the manifest cannot be read", dir)
	}
	listed := map[string]bool{ManifestName: true}
	for _, e := range m.Stacks {
		if e.File != File(e.Directory) {
			return nil, bad("the plan of %s is named %q, not %q", e.Directory, e.File, File(e.Directory))
		}
		d, err := digest(filepath.Join(dir, e.File))
		if err != nil {
			return nil, bad("the plan of %s: %v", e.Directory, err)
		}
		if d != e.Digest {
			return nil, bad("the plan of %s (%s) is not the one the manifest lists: it was replaced or altered after the plan", e.Directory, e.File)
		}
		listed[e.File] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, errcode.Wrap(errcode.Usage, err, "cannot read the plans in %s", dir)
	}
	var extra []string
	for _, e := range entries {
		if !listed[e.Name()] {
			extra = append(extra, e.Name())
		}
	}
	if len(extra) > 0 {
		return nil, bad("it holds files the manifest does not list (%s): it was changed after the plan", strings.Join(extra, ", "))
	}
	return &m, nil
}

func digest(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// Describe is the manifest in one line for people.
func (m *Manifest) Describe() string {
	return fmt.Sprintf("%d stacks planned by %s at commit %s (%s)", len(m.Stacks), m.Which, shortCommit(m.Commit), m.CreatedAt.Format(time.RFC3339))
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	if c == "" {
		return "unknown"
	}
	return c
}
