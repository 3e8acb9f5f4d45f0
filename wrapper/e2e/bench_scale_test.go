package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// scaleConfig is 10,000 instant resources: ten instances of a module of
// 1,000 terraform_data each. rev changes the input of the first 100
// resources of the first instance: each new value is a 100-change apply.
var scaleConfig = map[string]string{
	"main.tf": `variable "rev" {
  type    = number
  default = 0
}

module "m" {
  source = "./m"
  count  = 10
  name   = "m${count.index}"
  rev    = count.index == 0 ? var.rev : 0
}
`,
	"m/main.tf": `variable "name" { type = string }
variable "rev" { type = number }

resource "terraform_data" "r" {
  count = 1000
  input = "${var.name}-${count.index}-${count.index < 100 ? var.rev : 0}"
}
`,
}

// BenchmarkScaleTenThousand measures a scope of 10,000 resources (issue 31
// item 3): a no-change apply and a 100-change apply, each with sponson's
// own CPU and peak memory apart from the engine's (SPONSON_RUSAGE:
// getrusage of the sponson process and of the processes it waited for),
// side by side with the bare engine's `apply -auto-approve` of the same
// change on its own copy (of sponson's state); and what the 100-change run
// wrote of its receipts and records (docs/design.md §2.17 "Ledger base")
// against the size of the state: its outcome receipt (the checkpoint
// before it went to the same file, written against the same base), the
// records it changed, and the index part it rewrote (none when no
// ownership changed), beside the size of that part. Not among the E2E benchmarks: its set-up
// applies 10,000 resources twice and takes minutes.
func BenchmarkScaleTenThousand(b *testing.B) {
	if os.Getenv("SPONSON_E2E") != "1" {
		b.Skip("set SPONSON_E2E=1 and SPONSON_TEST_ENGINE (make bench does)")
	}
	onEngine(b, benchScale)
}

// runUsage is one run's resource usage: sponson's own and its children's
// (the engine's) CPU seconds and peak memory, and its wall time.
type runUsage struct {
	SelfCPU        float64 `json:"selfCpuSeconds"`
	ChildrenCPU    float64 `json:"childrenCpuSeconds"`
	SelfMaxRSS     int64   `json:"selfMaxRssKiB"`
	ChildrenMaxRSS int64   `json:"childrenMaxRssKiB"`
	wall           time.Duration
}

func benchScale(b *testing.B) {
	h := e2eBench(b)
	mk := func() string {
		dir := b.TempDir()
		for name, content := range scaleConfig {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		return dir
	}
	bareDir, wrapDir := mk(), mk()
	h.mustRun(wrapDir, "apply", "--scope", "big")
	// The bare engine's copy starts from the same state, as its local
	// state: a bare first apply of 10,000 resources writes its local state
	// after every change, which takes Terraform 1.13 tens of minutes here.
	state, err := os.ReadFile(filepath.Join(scopeDir(wrapDir, "preview", "big"), "terraform.tfstate"))
	if err == nil {
		err = os.WriteFile(filepath.Join(bareDir, "terraform.tfstate"), state, 0o600)
	}
	if err != nil {
		b.Fatal(err)
	}
	engineCmd(b, h, bareDir, "init", "-input=false", "-no-color")

	usageFile := filepath.Join(b.TempDir(), "usage.json")
	sponson := func(args ...string) runUsage {
		start := time.Now()
		if r := h.run(wrapDir, []string{"SPONSON_RUSAGE=" + usageFile}, append([]string{"apply", "--scope", "big"}, args...)...); r.exit != 0 {
			b.Fatalf("sponson apply %v: exit %d\n%s", args, r.exit, r.stderr)
		}
		u := runUsage{wall: time.Since(start)}
		data, err := os.ReadFile(usageFile)
		if err == nil {
			err = json.Unmarshal(data, &u)
		}
		if err != nil {
			b.Fatalf("SPONSON_RUSAGE: %v", err)
		}
		return u
	}
	bare := func(args ...string) runUsage {
		start := time.Now()
		ps := engineCmd(b, h, bareDir, append([]string{"apply", "-auto-approve", "-input=false", "-no-color"}, args...)...)
		u := runUsage{wall: time.Since(start)}
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			u.ChildrenCPU = (time.Duration(ru.Utime.Nano()) + time.Duration(ru.Stime.Nano())).Seconds()
			u.ChildrenMaxRSS = ru.Maxrss
		}
		return u
	}
	var noChange, change, bareNoChange, bareChange []runUsage
	var receiptBytes, recordBytes, indexBytes, stateBytes []float64
	scope := scopeDir(wrapDir, "preview", "big")
	for i := 0; b.Loop(); i++ {
		bareNoChange = append(bareNoChange, bare())
		noChange = append(noChange, sponson())
		rev := fmt.Sprintf("rev=%d", i+1)
		bareChange = append(bareChange, bare("-var", rev))
		before := time.Now()
		change = append(change, sponson("-var", rev))
		receiptBytes = append(receiptBytes, fileSize(b, filepath.Join(scope, "latest.json")))
		recordBytes = append(recordBytes, writtenSince(b, filepath.Join(scope, "records"), before))
		indexBytes = append(indexBytes, writtenSince(b, ownersDir(wrapDir, "preview"), before))
		stateBytes = append(stateBytes, fileSize(b, filepath.Join(scope, "terraform.tfstate")))
	}
	report := func(prefix string, runs, bareRuns []runUsage) {
		self := medianOf(runs, func(u runUsage) float64 { return u.SelfCPU })
		engine := medianOf(runs, func(u runUsage) float64 { return u.ChildrenCPU })
		b.ReportMetric(self, prefix+"-sponson-cpu-s")
		b.ReportMetric(engine, prefix+"-engine-cpu-s")
		b.ReportMetric(self/engine, prefix+"-sponson-share")
		b.ReportMetric(medianOf(runs, func(u runUsage) float64 { return float64(u.SelfMaxRSS) / 1024 }), prefix+"-sponson-peak-MiB")
		b.ReportMetric(medianOf(runs, func(u runUsage) float64 { return float64(u.ChildrenMaxRSS) / 1024 }), prefix+"-engine-peak-MiB")
		b.ReportMetric(medianOf(runs, func(u runUsage) float64 { return u.wall.Seconds() }), prefix+"-sponson-s")
		b.ReportMetric(medianOf(bareRuns, func(u runUsage) float64 { return u.wall.Seconds() }), prefix+"-bare-s")
		b.ReportMetric(medianOf(bareRuns, func(u runUsage) float64 { return u.ChildrenCPU }), prefix+"-bare-cpu-s")
	}
	report("nochange", noChange, bareNoChange)
	report("change100", change, bareChange)
	kib := func(f float64) float64 { return f / (1 << 10) }
	b.ReportMetric(medianOf(receiptBytes, kib), "change100-receipt-KiB")
	b.ReportMetric(medianOf(recordBytes, kib), "change100-records-KiB")
	b.ReportMetric(medianOf(indexBytes, kib), "change100-index-KiB")
	b.ReportMetric(fileSize(b, filepath.Join(ownersDir(wrapDir, "preview"), "big.json"))/(1<<10), "index-part-KiB")
	b.ReportMetric(medianOf(stateBytes, kib), "state-KiB")
}

// writtenSince sums the sizes of the files of dir changed since t: the
// records a run wrote (a new ledger base, its journal).
func writtenSince(b *testing.B, dir string, t time.Time) float64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	sum := 0.0
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && !fi.ModTime().Before(t) {
			sum += float64(fi.Size())
		}
	}
	return sum
}

// ownersDir holds the file store's ownership index parts of e2eStack's
// scopes of env: a receipt write that changed ownership rewrites its
// scope's part whole.
func ownersDir(dir, env string) string {
	return filepath.Join(dir, ".sponson", "@stacks", env, ".owners", store.StackSegment(e2eStack))
}

func fileSize(b *testing.B, p string) float64 {
	fi, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	return float64(fi.Size())
}

func medianOf[T any](xs []T, f func(T) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	slices.Sort(v)
	return v[len(v)/2]
}
