#!/usr/bin/env bash
# Builds the pinned goreleaser from the Go module proxy into a cache outside
# the checkout and prints its path. `make release-snapshot` and .ci/run use it;
# the release workflow uses the same version through goreleaser-action.
# A cold build takes several minutes on two cores; a warm one returns at once.
set -euo pipefail

version="${GORELEASER_VERSION:-v2.16.0}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/sponson/goreleaser/$version"
bin="$cache/goreleaser"

if [ ! -x "$bin" ]; then
	echo "building goreleaser $version into $cache (first time only; takes several minutes)" >&2
	mkdir -p "$cache"
	GOBIN="$cache/tmp" go install -trimpath -ldflags "-s -w -X main.version=$version" \
		"github.com/goreleaser/goreleaser/v2@$version"
	mv "$cache/tmp/goreleaser" "$bin"
	rmdir "$cache/tmp"
fi
"$bin" --version >/dev/null 2>&1 || { echo "$bin does not run" >&2; exit 1; }
echo "$bin"
