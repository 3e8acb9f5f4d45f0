package wrapper_test

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// BenchmarkE2EApplyOverhead measures `sponson apply` against the bare engine
// on the same configuration of 50 terraform_data resources, each side
// creating them from scratch, side by side in one run (DESIGN.md §8 target:
// at most 1.10x). The bare side is what a pipeline runs without sponson:
// `tofu init` then `tofu apply -auto-approve`; the apply-only ratio is
// reported too. Run with -benchtime Nx; each iteration is one pair.
func BenchmarkE2EApplyOverhead(b *testing.B) {
	if os.Getenv("SPONSON_E2E") != "1" {
		b.Skip("set SPONSON_E2E=1 and SPONSON_TEST_ENGINE (make bench does)")
	}
	// instant: creating a terraform_data costs nothing, so this shows the
	// fixed cost of sponson's extra engine starts (plan, show, apply of a
	// saved plan instead of one apply). slow: each resource takes 0.2 s, as
	// cloud resources take seconds.
	b.Run("instant", func(b *testing.B) { benchApplyOverhead(b, "testdata/fifty") })
	b.Run("slow", func(b *testing.B) { benchApplyOverhead(b, "testdata/fifty-slow") })
}

func benchApplyOverhead(b *testing.B, config string) {
	h := e2eBench(b)
	engine := os.Getenv("SPONSON_TEST_ENGINE")
	var bare, bareApply, wrapped []time.Duration
	for b.Loop() {
		dir := h.workdir(config)
		start := time.Now()
		for _, args := range [][]string{{"init", "-input=false", "-no-color"}, {"apply", "-auto-approve", "-input=false", "-no-color"}} {
			if args[0] == "apply" {
				bareApply = append(bareApply, 0)
			}
			s := time.Now()
			cmd := exec.Command(engine, args...)
			cmd.Dir = dir
			cmd.Env = h.env
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("tofu %v: %v\n%s", args, err, out)
			}
			if args[0] == "apply" {
				bareApply[len(bareApply)-1] = time.Since(s)
			}
		}
		bare = append(bare, time.Since(start))

		dir = h.workdir(config)
		start = time.Now()
		h.mustRun(dir, "apply", "--scope", "bench")
		wrapped = append(wrapped, time.Since(start))
	}
	med := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2].Seconds()
	}
	b.ReportMetric(med(bare), "bare-init+apply-s")
	b.ReportMetric(med(bareApply), "bare-apply-s")
	b.ReportMetric(med(wrapped), "sponson-apply-s")
	b.ReportMetric(med(wrapped)/med(bare), "ratio-vs-init+apply")
	b.ReportMetric(med(wrapped)/med(bareApply), "ratio-vs-apply")
}
