// Command testsummary reads `go test -json` on stdin and prints a short
// report for one tier of tests: one line per package, the output of every
// failed test, why tests were skipped (each reason once, with how many
// tests it skipped: so a tier says when the real-provider tests did not
// run), and a closing "TIER: N passed, N failed, N skipped" line. It
// exits 1 when a test or a build failed, or when the tier ran no test at all
// (a tier that silently runs nothing must not look green).
//
// A test that started but never ended (its package hit `go test -timeout`
// or crashed) counts as failed, and its output is printed with the
// package's: that is where the runtime says which tests were running.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
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

// tally is what one tier's stream of events adds up to.
type tally struct {
	passed, failed, skipped int
	buildFailed             bool
	pkgLines                []string
	failures                []string
	output                  map[string][]string // "package test" -> lines
	running                 map[string]bool     // "package test" started, not ended
	order                   []string            // keys of running tests, in start order
	skips                   map[string]int      // reason -> tests it skipped
	skipOrder               []string            // reasons, first seen first
}

func main() {
	tier := "tests"
	if len(os.Args) > 1 {
		tier = os.Args[1]
	}
	t := read(os.Stdin)
	sort.Strings(t.pkgLines)
	for _, l := range t.pkgLines {
		if !strings.HasPrefix(l, "none") {
			fmt.Println(l)
		}
	}
	for _, r := range t.skipOrder {
		fmt.Printf("skipped %d: %s\n", t.skips[r], r)
	}
	for _, f := range t.failures {
		fmt.Println(f)
	}
	fmt.Printf("%s: %d passed, %d failed, %d skipped\n", tier, t.passed, t.failed, t.skipped)
	switch {
	case t.failed > 0 || t.buildFailed:
		os.Exit(1)
	case t.passed == 0:
		fmt.Printf("%s: no test ran; that is a failure of the test set-up\n", tier)
		os.Exit(1)
	}
}

func read(r io.Reader) *tally {
	t := &tally{output: map[string][]string{}, running: map[string]bool{}, skips: map[string]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			// Build errors arrive as plain text.
			fmt.Println(string(line))
			if strings.Contains(string(line), "build failed") || strings.HasPrefix(string(line), "#") {
				t.buildFailed = true
			}
			continue
		}
		t.add(ev)
	}
	t.unfinished("")
	return t
}

func (t *tally) add(ev event) {
	key := ev.Package + " " + ev.Test
	switch ev.Action {
	case "run":
		t.running[key] = true
		t.order = append(t.order, key)
	case "output":
		t.output[key] = append(t.output[key], ev.Output)
	case "pass", "fail", "skip":
		if ev.Test == "" {
			t.endPackage(ev, key)
			return
		}
		delete(t.running, key)
		switch ev.Action {
		case "pass":
			t.passed++
		case "fail":
			t.failed++
			t.failures = append(t.failures, fmt.Sprintf("--- FAIL: %s (%s)\n%s", ev.Test, ev.Package, strings.Join(t.output[key], "")))
		case "skip":
			t.skipped++
			r := skipReason(t.output[key])
			if t.skips[r] == 0 {
				t.skipOrder = append(t.skipOrder, r)
			}
			t.skips[r]++
		}
	}
}

func (t *tally) endPackage(ev event, key string) {
	status := map[string]string{"pass": "ok  ", "fail": "FAIL", "skip": "none"}[ev.Action]
	if ev.Action == "fail" && !t.anyTestFailed(ev.Package) && !t.anyRunning(ev.Package) {
		// A package that failed without a failed or unfinished test did
		// not build or crashed: show its output.
		t.failures = append(t.failures, strings.Join(t.output[key], ""))
		t.buildFailed = true
	}
	t.unfinished(ev.Package)
	t.pkgLines = append(t.pkgLines, fmt.Sprintf("%s %s %.1fs", status, ev.Package, ev.Elapsed))
}

// unfinished reports, as failed, the tests of pkg (of every package when
// pkg is empty) that started and never ended, with their output up to the
// goroutine dump (the runtime's timeout panic names the running tests there;
// the dump itself is in the raw stream test.sh keeps).
func (t *tally) unfinished(pkg string) {
	for _, key := range t.order {
		if !t.running[key] || (pkg != "" && !strings.HasPrefix(key, pkg+" ")) {
			continue
		}
		delete(t.running, key)
		p, test, _ := strings.Cut(key, " ")
		t.failed++
		t.failures = append(t.failures, fmt.Sprintf("--- DID NOT FINISH: %s (%s)\n%s", test, p, untilDump(t.output[key])))
	}
}

// skipLocation is the file:line a test's log line starts with.
var skipLocation = regexp.MustCompile(`^\S+\.go:\d+: `)

// skipReason is the first line a skipped test logged, without its file and
// line, or "(no reason given)".
func skipReason(lines []string) string {
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- ") {
			continue
		}
		return skipLocation.ReplaceAllString(l, "")
	}
	return "(no reason given)"
}

// untilDump is lines up to the first goroutine of a panic's dump.
func untilDump(lines []string) string {
	var b strings.Builder
	for i, l := range lines {
		if strings.HasPrefix(l, "goroutine ") && strings.Contains(l, "[") {
			fmt.Fprintf(&b, "(a goroutine dump of %d lines follows in the raw output)\n", len(lines)-i)
			break
		}
		b.WriteString(l)
	}
	return b.String()
}

func (t *tally) anyRunning(pkg string) bool {
	for key := range t.running {
		if strings.HasPrefix(key, pkg+" ") {
			return true
		}
	}
	return false
}

func (t *tally) anyTestFailed(pkg string) bool {
	for k, lines := range t.output {
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
