// Command benchreport turns the output of `go test -bench` (on stdin) into
// BENCHMARKS.md: one table per benchmark with its reported metrics (medians,
// p50/p99 and ratios measured in the same run), the machine it ran on and
// the command that produced it. The figures are whatever the run measured;
// this program only lays them out.
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"time"
)

type row struct {
	pkg, name string
	metrics   map[string]string
}

func main() {
	command := strings.Join(os.Args[1:], " ")
	var rows []row
	pkg := ""
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimPrefix(p, "github.com/sponson/terraform-provider-sponson/")
			continue
		}
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		r := row{pkg: pkg, name: trimProcs(f[0]), metrics: map[string]string{}}
		// f[1] is the iteration count; then value/unit pairs.
		r.metrics["runs"] = f[1]
		for i := 2; i+1 < len(f); i += 2 {
			if f[i+1] == "ns/op" {
				continue
			}
			r.metrics[f[i+1]] = f[i]
		}
		rows = append(rows, r)
	}
	var b strings.Builder
	b.WriteString("# Benchmarks\n\n")
	b.WriteString("<!-- Written by `make bench` (.ci/bench.sh); do not edit. -->\n\n")
	fmt.Fprintf(&b, "Measured %s on %s, %d cores, %s, %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), cpuModel(), runtime.NumCPU(), runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH)
	fmt.Fprintf(&b, "Command: `%s`\n\n", command)
	b.WriteString("Every figure of one table comes from the same run: medians (and p50/p99) in the units named,\n")
	b.WriteString("ratios computed from medians measured side by side. Targets are those of docs/design.md §8:\n")
	b.WriteString("wrapper overhead ≤ 1.10×; lease acquire + fenced write + release p50 ≤ 5 ms (file), ≤ 150 ms\n")
	b.WriteString("(git, local bare remote), ≤ 10 ms (PostgreSQL); the foreign check over 1,000 scopes × 50\n")
	b.WriteString("resources ≤ 200 ms; 16 pull requests at once all succeed without waiting on each other.\n")
	b.WriteString(targetTable(rows))
	groups := map[string][]row{}
	var order []string
	for _, r := range rows {
		if _, ok := groups[r.pkg]; !ok {
			order = append(order, r.pkg)
		}
		groups[r.pkg] = append(groups[r.pkg], r)
	}
	for _, p := range order {
		fmt.Fprintf(&b, "\n## %s\n\n", p)
		for _, r := range groups[p] {
			keys := make([]string, 0, len(r.metrics))
			for k := range r.metrics {
				if k != "runs" {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			fmt.Fprintf(&b, "**%s** (%s iterations)\n\n| metric | value |\n| --- | --- |\n", r.name, r.metrics["runs"])
			for _, k := range keys {
				fmt.Fprintf(&b, "| %s | %s |\n", k, r.metrics[k])
			}
			b.WriteString("\n")
		}
	}
	if err := write("BENCHMARKS.md", b.String()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("wrote BENCHMARKS.md (%d benchmarks)\n", len(rows))
}

// handMarker opens the hand-written tail of BENCHMARKS.md: the measurements
// behind docs/design.md and notes added by hand, which no run writes.
const handMarker = "<!-- Hand-written below this line: make bench keeps it as it is. -->"

// write writes the report to path, followed by the hand-written tail of the
// file already there: everything from the line handMarker onward, byte for
// byte. A file without the marker has no tail to keep.
func write(path, report string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	tail := ""
	if i := strings.Index(string(old), "\n"+handMarker+"\n"); i >= 0 {
		tail = string(old[i+1:])
	} else if strings.HasPrefix(string(old), handMarker+"\n") {
		tail = string(old)
	}
	if tail != "" {
		report = strings.TrimRight(report, "\n") + "\n\n" + tail
	}
	return os.WriteFile(path, []byte(report), 0o644)
}

// trimProcs drops the -GOMAXPROCS suffix go test adds to a name.
func trimProcs(name string) string {
	if i := strings.LastIndex(name, "-"); i > 0 && !strings.ContainsAny(name[i+1:], "=,") {
		return name[:i]
	}
	return name
}

func cpuModel() string {
	out, err := exec.Command("sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		return "unknown CPU"
	}
	return strings.TrimSpace(string(out))
}
