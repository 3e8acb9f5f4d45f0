package rules

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"testing/fstest"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/environments"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/gitcli"
)

// tree reads files of the repository at a revision, in a constant number of
// git processes: one `cat-file --batch` answers every candidate at once.
type tree struct {
	git  func(ctx context.Context, stdin []byte, args ...string) ([]byte, error)
	root string
}

// found is a declaration read at a revision: its path from the repository's
// root and its contents; path "" when the revision declares none.
type found struct {
	path string
	src  []byte
}

// declaration reads, at the first of refs that exists, the sponson.hcl that
// environments.Load would find for the directory rel: the first one in rel
// or a parent. It returns the revision read ("" when none of refs exists)
// and its commit.
func (t tree) declaration(ctx context.Context, refs []string, rel string) (at, commit string, decl found, err error) {
	var dirs []string
	for d := path.Clean(rel); ; d = path.Dir(d) {
		dirs = append(dirs, d)
		if d == "." || d == "/" {
			break
		}
	}
	var in bytes.Buffer
	for _, ref := range refs {
		if strings.ContainsAny(ref, " \t\r\n") || ref == "" {
			return "", "", found{}, errcode.New(errcode.Usage, "%s %q is not a revision", RefVar, ref)
		}
		fmt.Fprintf(&in, "%s^{commit}\n", ref)
		for _, d := range dirs {
			fmt.Fprintf(&in, "%s:%s\n", ref, path.Join(d, environments.FileName))
		}
	}
	objs, err := t.batch(ctx, in.Bytes())
	if err != nil {
		return "", "", found{}, err
	}
	per := 1 + len(dirs)
	for i, ref := range refs {
		c := objs[i*per]
		if c.missing {
			continue
		}
		for j, d := range dirs {
			if o := objs[i*per+1+j]; !o.missing && o.typ == "blob" {
				return ref, c.sha, found{path: path.Join(d, environments.FileName), src: o.data}, nil
			}
		}
		return ref, c.sha, found{}, nil
	}
	return "", "", found{}, nil
}

// files reads, at commit, every file under the paths (relative to dir, the
// declaration's directory) into a file system rooted at dir: the policies a
// declaration names, as the trusted revision has them.
func (t tree) files(ctx context.Context, commit, dir string, paths []string) (fs.FS, error) {
	out := fstest.MapFS{}
	if len(paths) == 0 {
		return out, nil
	}
	args := []string{"ls-tree", "-r", "-z", "--full-tree", commit, "--"}
	for _, p := range paths {
		args = append(args, path.Join(dir, cleanRel(p)))
	}
	list, err := t.git(ctx, nil, args...)
	if err != nil {
		return nil, errcode.Wrap(errcode.RulesUntrusted, err, "listing the policies of the trusted revision %s", commit)
	}
	var names, in []string
	for _, rec := range strings.Split(string(list), "\x00") {
		meta, name, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta) // mode type sha
		if len(f) != 3 || f[1] != "blob" || f[0] == "120000" {
			continue // a symlink names a path, not a policy
		}
		names = append(names, name)
		in = append(in, f[2])
	}
	if len(in) == 0 {
		return out, nil
	}
	objs, err := t.batch(ctx, []byte(strings.Join(in, "\n")+"\n"))
	if err != nil {
		return nil, err
	}
	prefix := ""
	if dir != "." {
		prefix = dir + "/"
	}
	for i, name := range names {
		out[strings.TrimPrefix(name, prefix)] = &fstest.MapFile{Data: objs[i].data, Mode: 0o444}
	}
	return out, nil
}

// object is one answer of `git cat-file --batch`.
type object struct {
	sha, typ string
	data     []byte
	missing  bool
}

// batch asks `git cat-file --batch` for every line of in, in order.
func (t tree) batch(ctx context.Context, in []byte) ([]object, error) {
	out, err := t.git(ctx, in, "cat-file", "--batch")
	if err != nil {
		return nil, errcode.Wrap(errcode.RulesUntrusted, err, "reading the trusted rules with git cat-file")
	}
	r := bufio.NewReader(bytes.NewReader(out))
	var objs []object
	for range bytes.Count(in, []byte("\n")) {
		header, err := r.ReadString('\n')
		if err != nil {
			return nil, errcode.Wrap(errcode.Internal, err, "git cat-file --batch answered fewer objects than asked")
		}
		line := strings.TrimSuffix(header, "\n")
		if strings.HasSuffix(line, " missing") || strings.HasSuffix(line, " ambiguous") {
			objs = append(objs, object{missing: true})
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, errcode.New(errcode.Internal, "git cat-file --batch answered %q", strings.TrimSpace(header))
		}
		size, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, errcode.New(errcode.Internal, "git cat-file --batch answered %q", strings.TrimSpace(header))
		}
		data := make([]byte, size+1) // the contents and their newline
		if _, err := io.ReadFull(r, data); err != nil {
			return nil, errcode.Wrap(errcode.Internal, err, "git cat-file --batch ended inside an object")
		}
		objs = append(objs, object{sha: f[0], typ: f[1], data: data[:size]})
	}
	return objs, nil
}

// GitIn is the Sources.Git of a repository directory: the git CLI through
// gitcli, each command bounded by gitTimeout.
func GitIn(dir string) func(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	return func(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
		out, stderr, err := gitcli.Cmd{Dir: dir, Args: args, Stdin: stdin, Timeout: gitTimeout}.Run(ctx)
		if err != nil {
			if msg := strings.TrimSpace(stderr); msg != "" {
				return nil, fmt.Errorf("git %s: %w: %s", args[0], err, msg)
			}
			return nil, fmt.Errorf("git %s: %w", args[0], err)
		}
		return out, nil
	}
}

// gitTimeout bounds each git command: reading the rules must not hang a run
// on a wedged file system.
const gitTimeout = 10 * time.Second
