#!/usr/bin/env bash
# Runs every benchmark of the project in one go and writes BENCHMARKS.md:
# store operations (p50/p99) per store, the foreign check from 10 to 1,000
# scopes (10,000 on PostgreSQL), sixteen scopes at once against one, and
# `sponson apply` against the bare engine at 10, 50 and 200 resources, the
# no-change and first applies of issue 31 at 50 and 1,000, and a scope of
# 10,000 resources (sponson's own CPU and memory against the engine's), on
# OpenTofu and on HashiCorp Terraform; and `sponson stacks` (with and
# without --changed) at 1,000 and 10,000 stacks beside the raw read of
# their .tf files, which runs no engine (once); and `plan --all` of 20 and
# 100 unchanged stacks, 2 and 4 at a time, beside the bare engine's plans
# of the same stacks run as many at a time. The table of targets at the top of
# BENCHMARKS.md gathers the rows of both engines.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
tofu="$root/.tools/bin/tofu"
[ -x "$tofu" ] || { echo "no engine at $tofu: run 'make tools' first" >&2; exit 1; }
empty_rc="$(mktemp)"
trap 'rm -f "$empty_rc"' EXIT
export TF_CLI_CONFIG_FILE="$empty_rc" SPONSON_E2E=1 SPONSON_TEST_ENGINE="$tofu"
# The S3 store's benchmarks run against versitygw (make tools builds it).
gw="$root/.tools/bin/versitygw"
[ -x "$gw" ] || { echo "no versitygw at $gw: run 'make tools' first" >&2; exit 1; }
export SPONSON_TEST_VERSITYGW="$gw" SPONSON_REQUIRE_VERSITYGW=1
# The GCS store's against fake-gcs-server (make tools builds it too).
fgcs="$root/.tools/bin/fake-gcs-server"
[ -x "$fgcs" ] || { echo "no fake-gcs-server at $fgcs: run 'make tools' first" >&2; exit 1; }
export SPONSON_TEST_FAKE_GCS="$fgcs" SPONSON_REQUIRE_FAKE_GCS=1
# The Azure store's against Azurite (make tools installs it from npm).
azurite="$root/.tools/bin/azurite-blob"
[ -x "$azurite" ] || { echo "no Azurite at $azurite: run 'make tools' first" >&2; exit 1; }
export SPONSON_TEST_AZURITE="$azurite" SPONSON_REQUIRE_AZURITE=1
out="$root/.tools/bench.txt"
mkdir -p .tools
terraform="$root/.tools/bin/terraform"
[ -x "$terraform" ] || { echo "no engine at $terraform: run 'make tools' first" >&2; exit 1; }
cmd="go test -run '^\$' -bench . -benchtime 20x ./internal/store/... && go test -run '^\$' -bench E2E -benchtime 5x ./wrapper/e2e/ && go test -run '^\$' -bench ScaleTenThousand -benchtime 2x ./wrapper/e2e/ (SPONSON_TEST_ENGINE=tofu, then terraform) && go test -run '^\$' -bench StacksScale -benchtime 5x ./wrapper/e2e/"
{
	go test -run '^$' -bench . -benchtime 20x ./internal/store/...
	go test -run '^$' -bench E2E -benchtime 5x -timeout 90m ./wrapper/e2e/
	SPONSON_TEST_ENGINE="$terraform" go test -run '^$' -bench E2E -benchtime 5x -timeout 90m ./wrapper/e2e/
	go test -run '^$' -bench ScaleTenThousand -benchtime 2x -timeout 60m ./wrapper/e2e/
	SPONSON_TEST_ENGINE="$terraform" go test -run '^$' -bench ScaleTenThousand -benchtime 2x -timeout 60m ./wrapper/e2e/
	go test -run '^$' -bench StacksScale -benchtime 5x -timeout 30m ./wrapper/e2e/
} | tee "$out"
go run ./.ci/benchreport "$cmd" <"$out"
