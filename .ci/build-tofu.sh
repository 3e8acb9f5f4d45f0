#!/usr/bin/env bash
# Builds the pinned OpenTofu from the Go module proxy into a cache outside the
# checkout, and links it as .tools/bin/tofu. No Terraform registry or release
# download is needed. OpenTofu's go.mod has a `replace`, so `go install`
# refuses it: the module is copied and built as the main module instead.
# A cold build takes 3-14 minutes on two cores; a warm one returns at once.
set -euo pipefail

version="${TOFU_VERSION:-v1.12.6}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/sponson/tofu/$version"
bin="$cache/tofu"
root="$(cd "$(dirname "$0")/.." && pwd)"

if [ ! -x "$bin" ]; then
	echo "building OpenTofu $version into $cache (first time only; takes several minutes)" >&2
	mkdir -p "$cache"
	src_dir=$(go mod download -json "github.com/opentofu/opentofu@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
	if [ -z "$src_dir" ]; then
		echo "could not download github.com/opentofu/opentofu@$version from the Go module proxy" >&2
		exit 1
	fi
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	cp -r "$src_dir" "$work/src"
	chmod -R u+w "$work/src"
	(cd "$work/src" && go build -trimpath -ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no" -o "$bin.tmp" ./cmd/tofu)
	mv "$bin.tmp" "$bin"
fi
mkdir -p "$root/.tools/bin"
ln -sfn "$bin" "$root/.tools/bin/tofu"
"$bin" version -json >/dev/null 2>&1 || { echo "$bin does not run" >&2; exit 1; }
echo "$root/.tools/bin/tofu -> $bin"
