package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkE2EPlanAll measures `sponson plan --all --parallelism P` over N
// stacks with no changes against the bare engine's plans of the same
// stacks run P at a time (`xargs -P P`), side by side in one run (issue 50
// item 2: ≤ 1.2× at N = 20 and 100, P = 2 and 4). Each stack is one small
// root module (its sponson_scope and ten terraform_data); the bare side's
// copy has the ten terraform_data alone, each with its own local state,
// initialised and applied once before the timing, as sponson's stacks are
// applied once. A third side plans the stacks as they are, sponson_scope
// included, with the bare engine and the provider installed from `sponson
// provider mirror` (the provider on its own, as a team without the wrapper
// runs it; local state): what the configuration costs the engine, apart
// from what the wrapper adds. Beside the wall times it reports the CPU each
// side took, and of sponson's the part its own processes took (the run's and
// each stack's sponson, SPONSON_RUSAGE of a directory: one file per process)
// apart from the engines and providers they started, per stack.
func BenchmarkE2EPlanAll(b *testing.B) {
	if os.Getenv("SPONSON_E2E") != "1" {
		b.Skip("set SPONSON_E2E=1 and SPONSON_TEST_ENGINE (make bench does)")
	}
	onEngine(b, func(b *testing.B) {
		for _, n := range []int{20, 100} {
			for _, p := range []int{2, 4} {
				b.Run(fmt.Sprintf("stacks=%d/parallelism=%d", n, p), func(b *testing.B) { benchPlanAll(b, n, p) })
			}
		}
	})
}

func benchPlanAll(b *testing.B, n, par int) {
	h := e2eBench(b)
	files := map[string]string{}
	bare, withProvider := b.TempDir(), b.TempDir()
	var dirs []string
	for i := range n {
		d := fmt.Sprintf("stacks/s%03d", i)
		dirs = append(dirs, d)
		data := fmt.Sprintf(`
resource "terraform_data" "d" {
  count = 10
  input = "s%03d-${count.index}"
}
`, i)
		files[d+"/main.tf"] = `terraform {
  required_providers {
    sponson = { source = "sponson/sponson" }
  }
}

resource "sponson_scope" "this" {}
` + data
		for dir, text := range map[string]string{bare: data, withProvider: files[d+"/main.tf"]} {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, d, "main.tf"), []byte(text), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	root := repoWith(b, files)
	env := []string{deriveStack, "SPONSON_STORE=file://" + filepath.Join(b.TempDir(), "store")}
	h.mustRunEnv(root, env, "apply", "--all", "--branch", "main", "--parallelism", fmt.Sprint(par))
	engine := os.Getenv("SPONSON_TEST_ENGINE")
	// The provider on its own: from the mirror, detecting its context
	// itself (a branch, as a CI job without the wrapper gives it).
	var mirror struct {
		Result struct {
			CLIConfig string `json:"cliConfig"`
		} `json:"result"`
	}
	r := h.mustRun(b.TempDir(), "provider", "mirror", filepath.Join(b.TempDir(), "mirror"), "--json")
	if err := json.Unmarshal([]byte(r.stdout), &mirror); err != nil {
		b.Fatalf("%v:\n%s", err, r.stdout)
	}
	rc := filepath.Join(b.TempDir(), "mirror.tfrc")
	if err := os.WriteFile(rc, []byte(mirror.Result.CLIConfig), 0o600); err != nil {
		b.Fatal(err)
	}
	providerEnv := append(append([]string{}, h.env...), "TF_CLI_CONFIG_FILE="+rc, "SPONSON_CTX_BRANCH=main")
	for _, side := range []struct {
		dir string
		env []string
	}{{bare, h.env}, {withProvider, providerEnv}} {
		for _, d := range dirs {
			for _, args := range [][]string{{"init", "-input=false", "-no-color"}, {"apply", "-auto-approve", "-input=false", "-no-color"}} {
				cmd := exec.Command(engine, append([]string{"-chdir=" + d}, args...)...)
				cmd.Dir = side.dir
				cmd.Env = side.env
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%s %v in %s: %v\n%s", engine, args, filepath.Join(side.dir, d), err, out)
				}
			}
		}
	}
	usageDir := b.TempDir()
	var wrapped, plain, provided []sample
	for b.Loop() {
		for _, e := range must(os.ReadDir(usageDir)) {
			if err := os.Remove(filepath.Join(usageDir, e.Name())); err != nil {
				b.Fatal(err)
			}
		}
		start := time.Now()
		r := h.run(root, append(env, "SPONSON_RUSAGE="+usageDir), "plan", "--all", "--branch", "main", "--parallelism", fmt.Sprint(par), "--json")
		w := sample{wall: time.Since(start)}
		if r.exit != 0 {
			b.Fatalf("sponson plan --all: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
		}
		// The run's own sponson counts its stack processes among its
		// children; each stack's sponson, its engine and providers.
		var most float64
		for _, e := range must(os.ReadDir(usageDir)) {
			var u runUsage
			data, err := os.ReadFile(filepath.Join(usageDir, e.Name()))
			if err == nil {
				err = json.Unmarshal(data, &u)
			}
			if err != nil {
				b.Fatal(err)
			}
			w.ownCPU += u.SelfCPU
			if u.ChildrenCPU > most {
				most, w.cpu = u.ChildrenCPU, u.SelfCPU+u.ChildrenCPU
			}
		}
		w.engine = w.cpu - w.ownCPU
		wrapped = append(wrapped, w)

		plain = append(plain, barePlans(b, engine, bare, h.env, dirs, par))
		provided = append(provided, barePlans(b, engine, withProvider, providerEnv, dirs, par))
	}
	wall := func(s sample) float64 { return s.wall.Seconds() }
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(medianOf(wrapped, wall), "sponson-s")
	b.ReportMetric(medianOf(plain, wall), "bare-s")
	b.ReportMetric(medianOf(wrapped, wall)/medianOf(plain, wall), "ratio")
	b.ReportMetric(medianOf(wrapped, func(s sample) float64 { return s.cpu }), "sponson-cpu-s")
	b.ReportMetric(medianOf(plain, func(s sample) float64 { return s.cpu }), "bare-cpu-s")
	b.ReportMetric(medianOf(provided, wall), "provider-s")
	b.ReportMetric(medianOf(wrapped, wall)/medianOf(provided, wall), "ratio-vs-provider")
	b.ReportMetric(medianOf(provided, func(s sample) float64 { return s.cpu }), "provider-cpu-s")
	b.ReportMetric(medianOf(wrapped, func(s sample) float64 { return s.ownCPU })/float64(n)*1000, "sponson-own-cpu-ms/stack")
	b.ReportMetric(medianOf(wrapped, func(s sample) float64 { return s.engine })/float64(n)*1000, "engine-cpu-ms/stack")
}

// sample is one side's figures of one iteration: its wall time, its CPU,
// and of sponson's the part its own processes took and the engines'.
type sample struct {
	wall                time.Duration
	cpu, ownCPU, engine float64
}

// barePlans plans each of dirs (relative to root) with the bare engine, par
// at a time (`xargs -P`), and returns the wall time and the CPU they took.
func barePlans(b *testing.B, engine, root string, env, dirs []string, par int) sample {
	b.Helper()
	start := time.Now()
	script := fmt.Sprintf(`printf '%%s\n' "$@" | xargs -P %d -I{} "$0" -chdir={} plan -input=false -no-color -lock=false >/dev/null`, par)
	cmd := exec.Command("sh", append([]string{"-c", script, engine}, dirs...)...)
	cmd.Dir = root
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("the bare plans in %s: %v\n%s", root, err, out)
	}
	ps := cmd.ProcessState
	return sample{wall: time.Since(start), cpu: (ps.UserTime() + ps.SystemTime()).Seconds()}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
