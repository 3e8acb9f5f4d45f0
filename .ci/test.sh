#!/usr/bin/env bash
# Runs the tiers of tests against the real engines of `make tools`:
#   unit            pure logic and real stores, no engine;
#   acceptance      the provider under terraform-plugin-testing (TF_ACC=1);
#   e2e-opentofu    the built sponson binary driving the real OpenTofu;
#   e2e-terraform   the same tests driving the real HashiCorp Terraform, but
#                   for those of .ci/e2e-one-engine.txt, whose subject is
#                   not the engine (OpenTofu runs them).
# The tiers run in two lanes, side by side (see below).
# The e2e tiers hold the real-provider tests (TestE2ERealProviders*, over
# HashiCorp's providers from ../shared/providers or SPONSON_REAL_PROVIDERS,
# and the time provider of `make tools`): without the binaries they skip,
# and the tier's summary says why, unless SPONSON_REQUIRE_REAL_PROVIDERS=1
# (CI) makes them fail.
# Each tier prints "TIER: N passed, N failed, N skipped" after each reason
# for a skip, then "-- TIER: Ns" (also into .tools/test-durations.log, for
# .ci/run's table); a tier that runs no test fails. Extra arguments go to
# every `go test` (e.g. -run, -v).
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
tofu="$root/.tools/bin/tofu"
terraform="$root/.tools/bin/terraform"
for bin in "$tofu" "$terraform"; do
	if [ ! -x "$bin" ]; then
		echo "no engine at $bin: run 'make tools' first" >&2
		exit 1
	fi
done
mkdir -p .tools/bin
go build -o .tools/bin/testsummary ./.ci/testsummary || exit 1

# The machine's own CLI configuration (if any) must not leak into the tests.
empty_rc="$(mktemp)"
trap 'rm -f "$empty_rc"' EXIT
export TF_CLI_CONFIG_FILE="$empty_rc"

# The e2e-terraform tier skips the tests of .ci/e2e-one-engine.txt, whose
# subject is not the engine: they run on OpenTofu only.
one_engine=$(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' .ci/e2e-one-engine.txt | paste -sd '|')
if [ -z "$one_engine" ]; then
	echo ".ci/e2e-one-engine.txt lists no test" >&2
	exit 1
fi

for name in ${one_engine//|/ }; do
	grep -q "^func $name(" wrapper/e2e/*_test.go ||
		echo "warning: .ci/e2e-one-engine.txt names $name, which wrapper/e2e does not define" >&2
done

status=0
started=$SECONDS
tier() {
	local name=$1 start=$SECONDS
	shift
	echo "== $name"
	# The raw stream stays in .tools/test-TIER.json (a timed-out test's
	# goroutine dump is there); the summary goes to the log.
	# `time` adds the CPU the tier's processes used (the engines and
	# providers included), so the log tells whether the two cores were busy.
	local TIMEFORMAT="-- $name: %Rs wall, %Us user + %Ss system CPU (%P%% of one core)"
	time "$@" | tee "$root/.tools/test-$name.json" | .tools/bin/testsummary "$name" | tee -a "$root/.tools/test-summary.log"
	local rc=("${PIPESTATUS[@]}")
	if [ "${rc[0]}" -ne 0 ] || [ "${rc[2]}" -ne 0 ]; then
		status=1
	fi
	echo "-- $name: $((SECONDS - start))s"
	printf '%-16s %5ds\n' "$name" $((SECONDS - start)) >>"$root/.tools/test-durations.log"
}

# beside TIER CMD...: runs the tier in the background, its output held in
# .tools/tier-TIER.log; joined TIER waits for it, prints that log and counts
# its failure.
declare -A side_pid=()
beside() {
	local name=$1
	(
		status=0
		tier "$@"
		exit "$status"
	) >"$root/.tools/tier-$name.log" 2>&1 &
	side_pid[$name]=$!
}
joined() {
	wait "${side_pid[$1]}" || status=1
	cat "$root/.tools/tier-$1.log"
}

: >"$root/.tools/test-summary.log"
: >"$root/.tools/test-durations.log"
# Two lanes, so that both cores stay busy: alone, each tier keeps about one
# of the two busy (the CPU line of each tier says so), since its tests wait
# on engines, providers, leases and servers more than they compute.
#   lane 1: e2e-opentofu, the longest tier, from the start, three of its
#           parallel tests at a time (they wait on engines and leases more
#           than they compute; the lane ends last with two);
#   lane 2: unit beside acceptance, then e2e-terraform.
# A tier in the background runs with its output held and printed whole when
# it is joined, so the log reads tier by tier. (The e2e tiers once ran one
# after the other because a killed run's git-store test lost its writes under
# the other's load: the kill of the run's process group also killed the local
# remote's receive-pack in the middle of its ref update, leaving the ref's
# lock file behind. The tests' git remote now runs receive-pack in a session
# of its own, as a real remote's server does: wrapper/e2e/e2e_git_test.go.)
beside e2e-opentofu env SPONSON_E2E=1 SPONSON_TEST_ENGINE="$tofu" \
	go test -count=1 -json -run '^TestE2E' -parallel 3 -timeout 60m "$@" ./wrapper/...
beside acceptance env TF_ACC=1 TF_ACC_TERRAFORM_PATH="$tofu" TF_ACC_PROVIDER_HOST=registry.opentofu.org \
	go test -count=1 -json -run '^TestAcc' "$@" ./provider/... ./internal/fixtureprovider/...
tier unit go test -count=1 -json -skip '^(TestAcc|TestE2E)' "$@" ./... ./.ci/releaseconfig ./.ci/releasetargets ./.ci/installsh ./.ci/testsummary
joined acceptance
tier e2e-terraform env SPONSON_E2E=1 SPONSON_TEST_ENGINE="$terraform" \
	go test -count=1 -json -run '^TestE2E' -skip "^($one_engine)\$" -timeout 60m "$@" ./wrapper/...
joined e2e-opentofu

awk -F'[:,]' '/^(unit|acceptance|e2e-opentofu|e2e-terraform): [0-9]+ passed/ {
	split($2, p, " "); split($3, f, " "); split($4, s, " ");
	P += p[1]; F += f[1]; S += s[1]
} END { printf "total: %d passed, %d failed, %d skipped\n", P, F, S }' "$root/.tools/test-summary.log"
echo "-- tests: $((SECONDS - started))s"
exit $status
