package main

import (
	"strings"
	"testing"
)

// A package that hit `go test -timeout`: two parallel tests never ended, the
// runtime's panic went to the last one continued, then the package failed.
const timedOut = `{"Action":"run","Package":"p","Test":"TestOK"}
{"Action":"pass","Package":"p","Test":"TestOK"}
{"Action":"run","Package":"p","Test":"TestHangA"}
{"Action":"run","Package":"p","Test":"TestHangB"}
{"Action":"output","Package":"p","Test":"TestHangB","Output":"panic: test timed out after 2s\n"}
{"Action":"output","Package":"p","Test":"TestHangB","Output":"\t\tTestHangA (2s)\n"}
{"Action":"output","Package":"p","Test":"TestHangB","Output":"goroutine 17 [running]:\n"}
{"Action":"output","Package":"p","Test":"TestHangB","Output":"main.main()\n"}
{"Action":"fail","Package":"p","Elapsed":2}
`

func TestTimedOutTestsCountAsFailed(t *testing.T) {
	got := read(strings.NewReader(timedOut))
	if got.passed != 1 || got.failed != 2 || got.buildFailed {
		t.Fatalf("passed %d failed %d buildFailed %v, want 1, 2, false", got.passed, got.failed, got.buildFailed)
	}
	report := strings.Join(got.failures, "\n")
	for _, want := range []string{"DID NOT FINISH: TestHangA", "DID NOT FINISH: TestHangB", "panic: test timed out", "goroutine dump of 2 lines"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, "main.main()") {
		t.Errorf("report carries the goroutine dump:\n%s", report)
	}
}

func TestPackageFailureWithoutTestsIsABuildFailure(t *testing.T) {
	got := read(strings.NewReader(`{"Action":"output","Package":"p","Output":"p.go:1: syntax error\n"}
{"Action":"fail","Package":"p"}
`))
	if !got.buildFailed || !strings.Contains(strings.Join(got.failures, ""), "syntax error") {
		t.Fatalf("buildFailed %v, failures %q", got.buildFailed, got.failures)
	}
}

// Skipped tests are listed by reason, each reason once with its count.
func TestSkipReasonsAreCounted(t *testing.T) {
	got := read(strings.NewReader(`{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    real.go:12: real-provider test skipped: missing\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- SKIP: TestA (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    real.go:12: real-provider test skipped: missing\n"}
{"Action":"skip","Package":"p","Test":"TestB"}
{"Action":"run","Package":"p","Test":"TestC"}
{"Action":"skip","Package":"p","Test":"TestC"}
{"Action":"pass","Package":"p"}
`))
	if got.skipped != 3 || len(got.skipOrder) != 2 || got.skips["real-provider test skipped: missing"] != 2 || got.skips["(no reason given)"] != 1 {
		t.Fatalf("skipped %d, reasons %v %v", got.skipped, got.skipOrder, got.skips)
	}
}
