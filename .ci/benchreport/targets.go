package main

import (
	"fmt"
	"strings"
)

// target is one row of the table of targets (issue 31): where its figures
// are in the rows of the run, per engine where the benchmark runs on both.
type target struct {
	what, goal string
	// bench is the benchmark's name, with {engine} for the engine's part;
	// pkg the package it is in.
	pkg, bench string
	// sponson and base are the metrics compared (base "" when the row is
	// one figure); ratio the metric holding their ratio, if reported.
	sponson, base, ratio string
}

var targets = []target{
	{"no-change apply, 50 resources, vs `apply -auto-approve`", "≤ 1.5×", "wrapper/e2e", "BenchmarkE2ENoChangeApply/engine={engine}/resources=50", "sponson-s", "bare-s", "ratio-vs-bare"},
	{"no-change apply, 50, vs the careful pipeline (init, plan -out, show -json, apply)", "≤ 1.0×", "wrapper/e2e", "BenchmarkE2ENoChangeApply/engine={engine}/resources=50", "sponson-s", "pipeline-s", "ratio-vs-pipeline"},
	{"first apply, 50 (new scope vs fresh `init && apply`)", "≤ 1.5×", "wrapper/e2e", "BenchmarkE2EFirstApply/engine={engine}/resources=50", "sponson-s", "bare-s", "ratio"},
	{"apply changing every resource, 50, vs the careful pipeline", "≤ 1.0×", "wrapper/e2e", "BenchmarkE2EChangeApply/engine={engine}/resources=50", "sponson-s", "pipeline-s", "ratio-vs-pipeline"},
	{"apply changing every resource, 50, vs `apply -auto-approve`", "documented", "wrapper/e2e", "BenchmarkE2EChangeApply/engine={engine}/resources=50", "sponson-s", "bare-s", "ratio-vs-bare"},
	{"apply changing every resource, 1,000, vs the careful pipeline", "≤ 1.0×", "wrapper/e2e", "BenchmarkE2EChangeApply/engine={engine}/resources=1000", "sponson-s", "pipeline-s", "ratio-vs-pipeline"},
	{"apply changing every resource, 1,000, vs `apply -auto-approve`", "documented", "wrapper/e2e", "BenchmarkE2EChangeApply/engine={engine}/resources=1000", "sponson-s", "bare-s", "ratio-vs-bare"},
	{"no-change apply, 1,000", "≤ 1.10×", "wrapper/e2e", "BenchmarkE2ENoChangeApply/engine={engine}/resources=1000", "sponson-s", "bare-s", "ratio-vs-bare"},
	{"first apply, 1,000", "≤ 1.20×", "wrapper/e2e", "BenchmarkE2EFirstApply/engine={engine}/resources=1000", "sponson-s", "bare-s", "ratio"},
	{"10,000 resources, no change: sponson's own CPU vs the engine's (s)", "≤ 10%", "wrapper/e2e", "BenchmarkScaleTenThousand/engine={engine}", "nochange-sponson-cpu-s", "nochange-engine-cpu-s", "nochange-sponson-share"},
	{"10,000 resources, 100 changes: sponson's own CPU vs the engine's (s)", "≤ 10%", "wrapper/e2e", "BenchmarkScaleTenThousand/engine={engine}", "change100-sponson-cpu-s", "change100-engine-cpu-s", "change100-sponson-share"},
	{"10,000 resources, 100 changes: sponson's peak memory vs the engine's (MiB)", "≤ 1×", "wrapper/e2e", "BenchmarkScaleTenThousand/engine={engine}", "change100-sponson-peak-MiB", "change100-engine-peak-MiB", ""},
	{"10,000 resources, 100 changes: the outcome receipt vs the state (KiB)", "∝ changes", "wrapper/e2e", "BenchmarkScaleTenThousand/engine={engine}", "change100-receipt-KiB", "state-KiB", ""},
	{"10,000 resources, 100 changes: records written (ledger base, journal) vs the state (KiB)", "∝ changes", "wrapper/e2e", "BenchmarkScaleTenThousand/engine={engine}", "change100-records-KiB", "state-KiB", ""},
	{"10,000 resources, 100 changes: the index part written vs its size (KiB)", "∝ changes", "wrapper/e2e", "BenchmarkScaleTenThousand/engine={engine}", "change100-index-KiB", "index-part-KiB", ""},
	{"first apply, 1,000: the checkpoint's largest journal write vs one receipt write (KiB)", "∝ changes", "wrapper/e2e", "BenchmarkE2EFirstApply/engine={engine}/resources=1000", "journal-last-write-KiB", "receipt-KiB", ""},
	{"foreign check, 10,000 scopes × 50, PostgreSQL, p50 (ms)", "≤ 300 ms", "internal/store/pgstore", "BenchmarkOwners10000", "owners-p50-ms", "", ""},
	{"foreign check, 10,000 scopes × 50, S3 (versitygw), warm p50 (ms)", "≤ 300 ms", "internal/store/s3store", "BenchmarkOwners/scopes=10000", "warm-p50-ms", "", ""},
	{"foreign check, 10,000 scopes × 50, S3 (versitygw), cold p50 (ms)", "≤ 300 ms", "internal/store/s3store", "BenchmarkOwners/scopes=10000", "cold-p50-ms", "", ""},
	{"foreign check, 10,000 scopes × 50, GCS (fake-gcs-server), warm p50 (ms)", "≤ 300 ms", "internal/store/gcsstore", "BenchmarkOwners/scopes=10000", "warm-p50-ms", "", ""},
	{"foreign check, 10,000 scopes × 50, GCS (fake-gcs-server), cold p50 (ms)", "≤ 300 ms", "internal/store/gcsstore", "BenchmarkOwners/scopes=10000", "cold-p50-ms", "", ""},
	{"`plan --all`, 20 unchanged stacks, 2 at a time, vs the bare engine's plans (`xargs -P 2`)", "≤ 1.2×", "wrapper/e2e", "BenchmarkE2EPlanAll/engine={engine}/stacks=20/parallelism=2", "sponson-s", "bare-s", "ratio"},
	{"`plan --all`, 20 unchanged stacks, 4 at a time, vs the bare engine's plans (`xargs -P 4`)", "≤ 1.2×", "wrapper/e2e", "BenchmarkE2EPlanAll/engine={engine}/stacks=20/parallelism=4", "sponson-s", "bare-s", "ratio"},
	{"`plan --all`, 100 unchanged stacks, 2 at a time, vs the bare engine's plans (`xargs -P 2`)", "≤ 1.2×", "wrapper/e2e", "BenchmarkE2EPlanAll/engine={engine}/stacks=100/parallelism=2", "sponson-s", "bare-s", "ratio"},
	{"`plan --all`, 100 unchanged stacks, 4 at a time, vs the bare engine's plans (`xargs -P 4`)", "≤ 1.2×", "wrapper/e2e", "BenchmarkE2EPlanAll/engine={engine}/stacks=100/parallelism=4", "sponson-s", "bare-s", "ratio"},
	{"`plan --all`, 20 unchanged stacks, 2 at a time, vs the engine's plans of the same stacks with the provider alone", "documented", "wrapper/e2e", "BenchmarkE2EPlanAll/engine={engine}/stacks=20/parallelism=2", "sponson-s", "provider-s", "ratio-vs-provider"},
	{"`plan --all`, 100 unchanged stacks, 2 at a time, vs the engine's plans of the same stacks with the provider alone", "documented", "wrapper/e2e", "BenchmarkE2EPlanAll/engine={engine}/stacks=100/parallelism=2", "sponson-s", "provider-s", "ratio-vs-provider"},
	{"`plan --all`, 100 unchanged stacks, 2 at a time: sponson's own CPU vs the engine's, per stack (ms)", "documented", "wrapper/e2e", "BenchmarkE2EPlanAll/engine={engine}/stacks=100/parallelism=2", "sponson-own-cpu-ms/stack", "engine-cpu-ms/stack", ""},
	{"foreign check, 10,000 scopes × 50, Azure (Azurite), warm p50 (ms)", "≤ 300 ms", "internal/store/azblobstore", "BenchmarkOwners/scopes=10000", "warm-p50-ms", "", ""},
	{"foreign check, 10,000 scopes × 50, Azure (Azurite), cold p50 (ms)", "≤ 300 ms", "internal/store/azblobstore", "BenchmarkOwners/scopes=10000", "cold-p50-ms", "", ""},
	{"git store, cold listing of 1,000 scopes × 50 (ms)", "documented", "internal/store/gitstore", "BenchmarkOwners/scopes=1000", "cold-ms", "", ""},
	{"`sponson stacks`, 1,000 stacks, vs reading every .tf file once", "≤ 0.5 s", "wrapper/e2e", "BenchmarkStacksScale/stacks=1000", "stacks-s", "read-tf-s", "stacks-vs-read"},
	{"`sponson stacks --changed` (one stack changed), 1,000 stacks, vs reading every .tf file once", "≤ 0.5 s", "wrapper/e2e", "BenchmarkStacksScale/stacks=1000", "changed-s", "read-tf-s", "changed-vs-read"},
	{"`sponson stacks`, 10,000 stacks, vs reading every .tf file once", "≤ 5 s", "wrapper/e2e", "BenchmarkStacksScale/stacks=10000", "stacks-s", "read-tf-s", "stacks-vs-read"},
	{"`sponson stacks --changed`, 10,000 stacks, vs reading every .tf file once", "≤ 5 s", "wrapper/e2e", "BenchmarkStacksScale/stacks=10000", "changed-s", "read-tf-s", "changed-vs-read"},
	{"`sponson stacks`, 10,000 stacks: peak memory, listing / --changed (MiB)", "≤ 200 MiB", "wrapper/e2e", "BenchmarkStacksScale/stacks=10000", "stacks-peak-MiB", "changed-peak-MiB", ""},
}

// targetTable lays out the targets' rows from rows, both engines side by
// side: sponson's figure, the one it is measured against, their ratio.
func targetTable(rows []row) string {
	find := func(pkg, name string) map[string]string {
		for _, r := range rows {
			if r.pkg == pkg && r.name == name {
				return r.metrics
			}
		}
		return nil
	}
	cell := func(t target, engine string) string {
		m := find(t.pkg, strings.ReplaceAll(t.bench, "{engine}", engine))
		if m == nil {
			return "not run"
		}
		s := m[t.sponson]
		if t.base == "" {
			return s
		}
		out := s + " / " + m[t.base]
		if t.ratio != "" {
			out += " = " + m[t.ratio]
		}
		return out
	}
	var b strings.Builder
	b.WriteString("\n## Targets\n\n")
	b.WriteString("The rows of issue 31, from the tables below (one run, both engines; wall seconds unless named;\n")
	b.WriteString("\"A / B = ratio\" is sponson's median against the bare engine's, or the pipeline's, measured in turn).\n\n")
	b.WriteString("| case | target | OpenTofu | Terraform |\n| --- | --- | --- | --- |\n")
	for _, t := range targets {
		tofu, tf := cell(t, "opentofu"), cell(t, "terraform")
		if !strings.Contains(t.bench, "{engine}") {
			tf = "(no engine: as OpenTofu)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t.what, t.goal, tofu, tf)
	}
	return b.String()
}
