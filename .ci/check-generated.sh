#!/usr/bin/env bash
# Fails when a generated file is stale: regenerates everything `make generate`
# writes (the error reference and the CLI reference through go generate, the
# provider's registry docs through .ci/gendocs.sh) and compares docs/ with
# what is committed. Untracked files count: a new page that was never
# committed is as stale as a changed one.
#
# It needs the engine of `make tools` (gendocs.sh asks it for the schema), so
# .ci/run calls it after `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."

go generate ./...
.ci/gendocs.sh

if ! git diff --quiet -- docs || [ -n "$(git status --porcelain --untracked-files=all -- docs)" ]; then
	echo "docs/ is stale: run 'make generate' and commit the result. What changed:" >&2
	git status --short --untracked-files=all -- docs >&2
	git --no-pager diff --stat -- docs >&2
	exit 1
fi
echo "docs/ is up to date"
