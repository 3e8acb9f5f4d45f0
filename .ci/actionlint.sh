#!/usr/bin/env bash
# Checks the repository's GitHub Actions files before GitHub sees them:
#   actionlint   the workflows (.github/workflows) and the GitHub templates
#                (examples/ci/github-actions.yml, github-actions-monorepo.yml): expressions, contexts,
#                inputs of known actions, and (when it is on PATH) the
#                run: scripts through shellcheck;
#   action-validator  action.yml and the same workflows against GitHub's
#                JSON schemas (actionlint does not read action metadata);
#   and install.sh (which action.yml and the GitLab template run) is
#                checked by shellcheck as well.
# actionlint is built from the Go module proxy and action-validator installed
# from npm, both once, into caches outside the checkout. Extra arguments are
# more workflow files to check with actionlint and action-validator.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/sponson"

actionlint_version="${ACTIONLINT_VERSION:-v1.7.12}"
actionlint="$cache_root/actionlint/$actionlint_version/actionlint"
if [ ! -x "$actionlint" ]; then
	echo "building actionlint $actionlint_version into $(dirname "$actionlint") (first time only)" >&2
	GOBIN="$(dirname "$actionlint")" go install "github.com/rhysd/actionlint/cmd/actionlint@$actionlint_version"
fi

validator_version="${ACTION_VALIDATOR_VERSION:-0.6.0}"
validator_dir="$cache_root/action-validator/$validator_version"
validator="$validator_dir/node_modules/.bin/action-validator"
if [ ! -x "$validator" ]; then
	echo "installing @action-validator/cli $validator_version into $validator_dir (first time only)" >&2
	npm install --silent --no-audit --no-fund --prefix "$validator_dir" "@action-validator/cli@$validator_version" >&2
fi

if ! command -v shellcheck >/dev/null 2>&1; then
	echo "shellcheck is not installed (Debian: apt-get install shellcheck); actionlint skips the run: scripts" >&2
fi

workflows=(.github/workflows/*.yml examples/ci/github-actions.yml examples/ci/github-actions-monorepo.yml "$@")
status=0
echo "actionlint ${workflows[*]}"
"$actionlint" -no-color "${workflows[@]}" || status=1
for f in action.yml "${workflows[@]}"; do
	echo "action-validator $f"
	"$validator" "$f" || status=1
done
if command -v shellcheck >/dev/null 2>&1; then
	echo "shellcheck install.sh"
	shellcheck install.sh || status=1
fi
exit $status
