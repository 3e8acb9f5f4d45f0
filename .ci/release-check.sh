#!/usr/bin/env bash
# What a team that has never seen this repository gets, checked from the
# release archives: builds the snapshot release, checks its file names
# against the Registry's and install.sh's, serves it on loopback like
# GitHub's release page, installs it with the README's command into a fresh
# prefix with a fresh HOME, then runs `sponson version`, the demo and
# `sponson provider mirror` + `init` (with each engine of `make tools`) with
# the installed binary. Prints how long each step took.
#
# The snapshot is built for this machine's platform only, and every other
# platform of .goreleaser.yml is type-checked from source instead
# (.ci/releasetargets): compiling the whole dependency graph once per
# platform took 1,028 s of a cold CI run, the type-check takes about 4 s a
# platform (issue 47 item 5). The release workflow still compiles every
# platform when a tag is pushed.
#   --all-targets  builds every platform, as `make release-snapshot` and the
#                  release do, and checks the four archives install.sh knows;
#   --reuse        checks the dist/ of an earlier `make release-snapshot`
#                  instead of building one (the build is the long part).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
tofu="$root/.tools/bin/tofu"
[ -x "$tofu" ] || { echo "no engine at $tofu: run 'make tools' first" >&2; exit 1; }

timed() { # timed NAME CMD...: runs CMD, then prints NAME and its duration on stderr
	local name=$1 start rc=0
	start=$(date +%s%N)
	shift
	"$@" || rc=$?
	echo "-- $name: $((($(date +%s%N) - start) / 1000000)) ms" >&2
	return "$rc"
}
logged() { # logged FILE CMD...: runs CMD with its output in FILE, shown only if it fails
	local log=$1 rc=0
	shift
	"$@" >"$log" 2>&1 || rc=$?
	[ "$rc" -eq 0 ] || cat "$log" >&2
	return "$rc"
}

work=$(mktemp -d)
server=""
cleanup() {
	if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

host="$(go env GOOS)_$(go env GOARCH)"
case "${1:-}" in
--reuse)
	[ -f dist/metadata.json ] || { echo "no dist/metadata.json to reuse: run 'make release-snapshot' first" >&2; exit 1; }
	echo "-- reusing the snapshot in dist/"
	platforms=(linux_amd64 linux_arm64 darwin_amd64 darwin_arm64)
	;;
--all-targets)
	timed "release snapshot, every platform" make release-snapshot >/dev/null
	platforms=(linux_amd64 linux_arm64 darwin_amd64 darwin_arm64)
	;;
"")
	go run ./.ci/releasetargets host-config "$work/goreleaser.yml"
	goreleaser=$(.ci/build-tool.sh goreleaser)
	timed "release snapshot, $host" logged "$work/goreleaser.log" "$goreleaser" release --snapshot --clean --skip=sign,publish --config "$work/goreleaser.yml"
	timed "the other platforms type-checked" go run ./.ci/releasetargets typecheck
	platforms=("$host")
	;;
*)
	echo "usage: .ci/release-check.sh [--all-targets | --reuse]" >&2
	exit 2
	;;
esac

version=$(sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' dist/metadata.json | head -1)
[ -n "$version" ] || { echo "no version in dist/metadata.json" >&2; exit 1; }
echo "snapshot $version"
sums="terraform-provider-sponson_${version}_SHA256SUMS"
manifest="terraform-provider-sponson_${version}_manifest.json"
want=("$sums")
for p in "${platforms[@]}"; do
	want+=("terraform-provider-sponson_${version}_$p.zip" "sponson_${version}_$p.tar.gz")
done
for f in "${want[@]}"; do
	[ -f "dist/$f" ] || { echo "the snapshot has no dist/$f" >&2; ls dist >&2; exit 1; }
done
# Every archive is in the checksum file, and so is the manifest, which the
# release uploads from terraform-registry-manifest.json under its Registry
# name (it is not copied into dist/).
for f in dist/*.zip dist/*.tar.gz; do
	grep -q "  $(basename "$f")\$" "dist/$sums" || { echo "$sums lacks $(basename "$f")" >&2; exit 1; }
done
grep -qx "$(sha256sum terraform-registry-manifest.json | cut -d' ' -f1)  $manifest" "dist/$sums" ||
	{ echo "$sums lacks $manifest with the checksum of terraform-registry-manifest.json" >&2; exit 1; }
(cd dist && sha256sum --quiet --ignore-missing -c "$sums")
# (The list first: grep -q ending a pipe early would fail it under pipefail.)
zipped=$(unzip -Z1 "dist/terraform-provider-sponson_${version}_${platforms[0]}.zip")
grep -qx "terraform-provider-sponson_v${version}" <<<"$zipped" ||
	{ echo "the ${platforms[0]} zip does not hold terraform-provider-sponson_v${version}: $zipped" >&2; exit 1; }
echo "archives:"
for f in dist/*.zip dist/*.tar.gz; do
	printf '  %-58s %s bytes\n' "$(basename "$f")" "$(stat -c %s "$f")"
done

go build -o "$work/releaseserve" ./.ci/releaseserve
"$work/releaseserve" -dir dist -version "$version" -url-file "$work/url" &
server=$!
until [ -s "$work/url" ]; do
	kill -0 "$server" 2>/dev/null || { echo "the release server died" >&2; exit 1; }
	sleep 0.1
done
url=$(cat "$work/url")

# Nothing of this machine: a fresh HOME, a fresh prefix, a PATH of system
# tools only, and the command the README gives (with the loopback URL).
home="$work/home"
prefix="$home/.local"
mkdir -p "$home"
clean=(env -i "HOME=$home" "PATH=/usr/local/bin:/usr/bin:/bin" "TMPDIR=$work")
timed "install.sh" "${clean[@]}" sh install.sh --version "$version" --prefix "$prefix" --base-url "$url"
sponson="$prefix/bin/sponson"
got=$("${clean[@]}" "$sponson" version)
echo "$got"
case "$got" in
"sponson $version "*) ;;
*) echo "the installed sponson reports '$got', want version $version" >&2; exit 1 ;;
esac

timed "demo with the installed sponson" "${clean[@]}" "SPONSON=$sponson" "SPONSON_ENGINE=$tofu" examples/preview/demo.sh >"$work/demo.log" ||
	{ cat "$work/demo.log"; exit 1; }

# The provider alone, from the installed binary's mirror, with each engine.
"${clean[@]}" "$sponson" provider mirror "$work/mirror" --json >"$work/mirror.json"
sed -n 's/.*"cliConfig": *"\(.*\)",*$/\1/p' "$work/mirror.json" | sed 's/\\n/\n/g; s/\\"/"/g' >"$work/mirror.tfrc"
h1=$(grep -o '"h1:[^"]*"' "$work/mirror.json" | tr -d '"')
for engine in "$tofu" "$root/.tools/bin/terraform"; do
	if [ ! -x "$engine" ]; then
		echo "-- no $(basename "$engine") in .tools/bin: provider mirror not tried with it"
		continue
	fi
	cfg="$work/mirror-$(basename "$engine")"
	mkdir -p "$cfg"
	printf 'terraform {\n  required_providers {\n    sponson = { source = "sponson/sponson" }\n  }\n}\n' >"$cfg/main.tf"
	(cd "$cfg" && timed "$(basename "$engine") init from the mirror" "${clean[@]}" "TF_CLI_CONFIG_FILE=$work/mirror.tfrc" "$engine" init -input=false -no-color >"$cfg/init.log") ||
		{ cat "$cfg/init.log"; exit 1; }
	grep -q "\"$h1\"" "$cfg/.terraform.lock.hcl" ||
		{ echo "$(basename "$engine")'s lock file lacks $h1:" >&2; cat "$cfg/.terraform.lock.hcl" >&2; exit 1; }
done
echo "release check passed"
