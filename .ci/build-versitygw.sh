#!/usr/bin/env bash
# Builds the pinned versitygw (an S3-compatible server over a posix
# directory) from the Go module proxy into a cache outside the checkout, and
# links it as .tools/bin/versitygw: the S3 store's end-to-end tests and
# benchmarks run against it on loopback. Like OpenTofu it is copied and built
# as the main module (its go.mod has replace directives `go install` refuses).
# A cold build takes a few minutes on two cores; a warm one returns at once.
set -euo pipefail

version="${VERSITYGW_VERSION:-v1.8.0}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/sponson/versitygw/$version"
bin="$cache/versitygw"
root="$(cd "$(dirname "$0")/.." && pwd)"

if [ ! -x "$bin" ]; then
	echo "building versitygw $version into $cache (first time only; takes a few minutes)" >&2
	mkdir -p "$cache"
	src_dir=$(go mod download -json "github.com/versity/versitygw@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
	if [ -z "$src_dir" ]; then
		echo "could not download github.com/versity/versitygw@$version from the Go module proxy" >&2
		exit 1
	fi
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	cp -r "$src_dir" "$work/src"
	chmod -R u+w "$work/src"
	(cd "$work/src" && go build -trimpath -ldflags "-s -w" -o "$bin.tmp" ./cmd/versitygw)
	mv "$bin.tmp" "$bin"
fi
mkdir -p "$root/.tools/bin"
ln -sfn "$bin" "$root/.tools/bin/versitygw"
"$bin" --version >/dev/null 2>&1 || { echo "$bin does not run" >&2; exit 1; }
echo "$root/.tools/bin/versitygw -> $bin"
