// Command testsummary reads `go test -json` on stdin and prints a short
// report for one tier of tests: one line per package, the output of every
// failed test, and a closing "TIER: N passed, N failed, N skipped" line. It
// exits 1 when a test or a build failed, or when the tier ran no test at all
// (a tier that silently runs nothing must not look green).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

func main() {
	tier := "tests"
	if len(os.Args) > 1 {
		tier = os.Args[1]
	}
	var passed, failed, skipped int
	output := map[string][]string{} // package/test -> lines
	var failures []string
	var pkgLines []string
	buildFailed := false
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			// Build errors arrive as plain text.
			fmt.Println(string(line))
			if strings.Contains(string(line), "build failed") || strings.HasPrefix(string(line), "#") {
				buildFailed = true
			}
			continue
		}
		key := ev.Package + " " + ev.Test
		switch ev.Action {
		case "output":
			output[key] = append(output[key], ev.Output)
		case "pass", "fail", "skip":
			if ev.Test == "" {
				status := map[string]string{"pass": "ok  ", "fail": "FAIL", "skip": "none"}[ev.Action]
				if ev.Action == "fail" && !anyTestFailed(output, ev.Package) {
					// A package that failed without a failed test did not
					// build or crashed: show its output.
					failures = append(failures, strings.Join(output[key], ""))
					buildFailed = true
				}
				pkgLines = append(pkgLines, fmt.Sprintf("%s %s %.1fs", status, ev.Package, ev.Elapsed))
				continue
			}
			switch ev.Action {
			case "pass":
				passed++
			case "fail":
				failed++
				failures = append(failures, fmt.Sprintf("--- FAIL: %s (%s)\n%s", ev.Test, ev.Package, strings.Join(output[key], "")))
			case "skip":
				skipped++
			}
		}
	}
	sort.Strings(pkgLines)
	for _, l := range pkgLines {
		if !strings.HasPrefix(l, "none") {
			fmt.Println(l)
		}
	}
	for _, f := range failures {
		fmt.Println(f)
	}
	fmt.Printf("%s: %d passed, %d failed, %d skipped\n", tier, passed, failed, skipped)
	switch {
	case failed > 0 || buildFailed:
		os.Exit(1)
	case passed == 0:
		fmt.Printf("%s: no test ran; that is a failure of the test set-up\n", tier)
		os.Exit(1)
	}
}

func anyTestFailed(output map[string][]string, pkg string) bool {
	for k, lines := range output {
		if strings.HasPrefix(k, pkg+" ") && k != pkg+" " {
			for _, l := range lines {
				if strings.HasPrefix(strings.TrimSpace(l), "--- FAIL") {
					return true
				}
			}
		}
	}
	return false
}
