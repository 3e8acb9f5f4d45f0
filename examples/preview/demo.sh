#!/usr/bin/env bash
# The Sponson walkthrough: one configuration applied in three scopes of the
# preview environment (main, pr-1, pr-2; the two pull requests at the same
# time) on the embedded file store, then pr-1 destroyed while main and pr-2
# stay exactly as they were. Run it with `make demo`.
#
# It works on a copy of this directory in a temporary folder, so the checkout
# stays clean. SPONSON and SPONSON_ENGINE name the binaries (make demo sets
# both); the engine's full output of each run is kept in the logs folder.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
sponson="${SPONSON:-sponson}"
work="$(mktemp -d "${TMPDIR:-/tmp}/sponson-demo-XXXXXX")"
cp "$here"/*.tf "$work/"
mkdir -p "$work/logs"
cd "$work"

# The demo decides its context itself: no CI variables of the machine it
# runs on may leak in.
unset GITHUB_ACTIONS GITLAB_CI CIRCLECI BITBUCKET_BUILD_NUMBER SPONSON_CTX_PR SPONSON_CTX_BRANCH SPONSON_CTX_SCOPE
export SPONSON_CTX_ENV=preview
# A copy in a temporary directory is in no repository: name its stack.
export SPONSON_STACK=demo/preview

if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
step() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
run() { # run NAME ARGS...: one sponson run, engine output to logs/NAME.log
	local name=$1
	shift
	if ! "$sponson" "$@" >"logs/$name.log" 2>&1; then
		echo "sponson $* failed; its output:" >&2
		cat "logs/$name.log" >&2
		exit 1
	fi
	grep -E '^(sponson |warning: )' "logs/$name.log"
}
# The embedded store keeps each scope under its stack (.sponson/@stacks/<env>/<stack>/<scope>);
# the demo's directory is one stack.
state_sum() { sha256sum .sponson/@stacks/preview/*/"$1"/terraform.tfstate | cut -c1-16; }

step "working in $work"
cat main.tf | sed -n '/^data/,$p'

step "apply on the default branch: scope main"
run main-apply apply --branch main

step "two pull requests apply at the same time: scopes pr-1 and pr-2"
run pr-1-apply apply --pr 1 --branch feat/login &
run pr-2-apply apply --pr 2 --branch feat/search &
wait

step "what each scope owns"
"$sponson" status
for scope in main pr-1 pr-2; do
	echo
	"$sponson" receipt --scope "$scope"
done
main_before=$(state_sum main)
pr2_before=$(state_sum pr-2)

step "pull request 1 is closed: destroy scope pr-1"
run pr-1-destroy destroy --pr 1

step "main and pr-2 are untouched"
"$sponson" status
main_after=$(state_sum main)
pr2_after=$(state_sum pr-2)
echo "state of main: $main_before -> $main_after"
echo "state of pr-2: $pr2_before -> $pr2_after"
[ "$main_before" = "$main_after" ] && [ "$pr2_before" = "$pr2_after" ] || { echo "a neighbouring scope changed" >&2; exit 1; }
run main-plan plan --branch main
run pr-2-plan plan --pr 2 --branch feat/search

step "done: engine logs in $work/logs, the store in $work/.sponson"
