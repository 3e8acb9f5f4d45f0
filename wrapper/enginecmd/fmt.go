package enginecmd

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/terraform-exec/tfexec"
	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

func fmtFlags(fs *flag.FlagSet) engineRun {
	o := &fmtRun{
		check:     fs.Bool("check", false, "only check: list the unformatted files and fail (FMT_UNFORMATTED) if there are any"),
		recursive: fs.Bool("recursive", false, "also the subdirectories"),
		list:      fs.Bool("list", true, "list the files that are not (or were not) formatted"),
		write:     fs.Bool("write", true, "write the formatted files (false with -check)"),
		diff:      fs.Bool("diff", false, "print the differences of each unformatted file"),
	}
	return o.run
}

// fmtRun is `sponson fmt` with its flags: the engine's fmt, through
// terraform-exec's FormatCheck and FormatWrite.
type fmtRun struct {
	check, recursive, list, write, diff *bool
}

func (o *fmtRun) run(ctx context.Context, c *engineCall, args []string) (any, error) {
	if len(args) > 1 {
		return nil, errcode.New(errcode.Usage, "sponson fmt takes one DIR or FILE, got %q", args).
			WithHint("Run it once per directory, or with -recursive.")
	}
	opts := []tfexec.FormatOption{tfexec.Recursive(*o.recursive)}
	if len(args) == 1 {
		opts = append(opts, tfexec.Dir(args[0]))
	}
	ok, files, err := c.sess.FormatCheck(ctx, opts...)
	if err != nil {
		return nil, err
	}
	res := map[string]any{"files": nonNil(files)}
	if !*o.check && *o.write && !*o.diff {
		// Plain fmt: write, then list what was written.
		if len(files) > 0 {
			if err := c.sess.FormatWrite(ctx, opts...); err != nil {
				return nil, err
			}
		}
		o.listFiles(c, files)
		return res, nil
	}
	o.listFiles(c, files)
	if *o.diff {
		if err := writeFmtDiffs(ctx, c, args, files); err != nil {
			return nil, err
		}
	}
	switch {
	case ok:
		return res, nil
	case *o.check:
		return res, errcode.New(errcode.FmtUnformatted, "%d files are not formatted: %s", len(files), strings.Join(files, ", ")).
			WithHint("Run `sponson fmt` (or `tofu fmt`) to format them.")
	case *o.write:
		return res, c.sess.FormatWrite(ctx, opts...)
	}
	return res, nil
}

// listFiles prints the files fmt found unformatted, under -list.
func (o *fmtRun) listFiles(c *engineCall, files []string) {
	if *o.list {
		for _, f := range files {
			fmt.Fprintln(c.out, f)
		}
	}
}

// writeFmtDiffs prints, for each unformatted file, the engine's formatting
// of it next to what is there (the engine's -diff, which terraform-exec
// cannot ask for), as a unified diff.
func writeFmtDiffs(ctx context.Context, c *engineCall, args, files []string) error {
	base := c.dir
	if len(args) == 1 {
		if fi, err := os.Stat(filepath.Join(c.dir, args[0])); err == nil && fi.IsDir() {
			base = filepath.Join(c.dir, args[0])
		}
	}
	for _, name := range files {
		p := name
		if !filepath.IsAbs(p) {
			if _, err := os.Stat(filepath.Join(base, p)); err == nil {
				p = filepath.Join(base, p)
			} else {
				p = filepath.Join(c.dir, p)
			}
		}
		before, err := os.ReadFile(p)
		if err != nil {
			return errcode.Wrap(errcode.Usage, err, "reading %s", name)
		}
		after, err := c.sess.FormatString(ctx, string(before))
		if err != nil {
			return err
		}
		fmt.Fprint(c.out, UnifiedDiff(name, string(before), after))
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// UnifiedDiff is a unified diff of two texts in one hunk: the lines both
// keep (their longest common subsequence) and what each removes or adds.
func UnifiedDiff(name, before, after string) string {
	if before == after {
		return ""
	}
	a, b := splitLines(before), splitLines(after)
	// lcs[i][j] is the length of the common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- old/%s\n+++ new/%s\n@@ -1,%d +1,%d @@\n", name, name, len(a), len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out.WriteString(" " + a[i] + "\n")
			i++
			j++
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			out.WriteString("-" + a[i] + "\n")
			i++
		default:
			out.WriteString("+" + b[j] + "\n")
			j++
		}
	}
	return out.String()
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
