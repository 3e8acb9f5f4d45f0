#!/usr/bin/env bash
# Builds one pinned tool from the Go module proxy into a cache outside the
# checkout, so that no release download (and no Terraform registry) is needed:
#
#   .ci/build-tool.sh tofu        OpenTofu, linked as .tools/bin/tofu
#   .ci/build-tool.sh terraform   HashiCorp Terraform, linked as .tools/bin/terraform
#   .ci/build-tool.sh versitygw   versitygw, linked as .tools/bin/versitygw
#   .ci/build-tool.sh fake-gcs-server
#                                 fake-gcs-server, linked as .tools/bin/fake-gcs-server
#   .ci/build-tool.sh azurite-blob
#                                 Azurite's blob service, from the npm registry (not
#                                 the Go proxy: it is Node), linked as .tools/bin/azurite-blob
#   .ci/build-tool.sh goreleaser  goreleaser, not linked
#   .ci/build-tool.sh time-provider
#                                 HashiCorp's time provider for the real-provider
#                                 tests (internal/realproviders), not linked
#   .ci/build-tool.sh conftest    conftest, which the plan JSON test runs on
#                                 sponson's plan JSON, not linked
#
# The binary is ${XDG_CACHE_HOME:-$HOME/.cache}/sponson/TOOL/VERSION/BINARY
# (BINARY is TOOL but for the time provider, terraform-provider-time), the
# version $TOFU_VERSION, $TERRAFORM_VERSION, $VERSITYGW_VERSION, $FAKE_GCS_VERSION, $AZURITE_VERSION,
# $GORELEASER_VERSION, $TIME_PROVIDER_VERSION or $CONFTEST_VERSION when set, else the pin in the
# recipe below. A cold build
# takes minutes on two cores; a warm one only checks that the binary runs.
# A linked tool prints "<checkout>/.tools/bin/TOOL -> <binary>"; an unlinked
# one only the binary's path (`make release-snapshot` runs goreleaser's). Exits 1
# when the build fails or the binary does not run, 2 for an unknown tool.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"

# A recipe sets name (for people), version, module, main (the package built,
# relative to the module), ldflags, binary (the file name, when not the
# tool's), probe (arguments that show the binary runs), link (yes: linked
# into .tools/bin), takes (a cold build, in words)
# and how: "copy" copies the module and builds it as the main module, for
# modules whose go.mod has replace directives `go install` refuses;
# "install" is `go install module@version`; "npm" is `npm install
# module@version` into the cache (module is then the npm package). A copy build runs prepare in
# the copy first.
prepare() { :; }

recipe() {
	case "$1" in
	tofu)
		# OpenTofu's go.mod has a `replace`. Cold: 3-14 minutes.
		name=OpenTofu version="${TOFU_VERSION:-v1.12.6}" module=github.com/opentofu/opentofu
		main=./cmd/tofu ldflags="-s -w -X github.com/opentofu/opentofu/version.dev=no"
		probe=(version -json) link=yes takes="several minutes" how=copy
		recipe_id=lean
		prepare() { patch_tofu "$@"; }
		;;
	terraform)
		# HashiCorp Terraform, so the e2e tier can run against both
		# engines. Cold: 4-15 minutes.
		name="HashiCorp Terraform" version="${TERRAFORM_VERSION:-v1.16.0}" module=github.com/hashicorp/terraform
		main=. ldflags="-s -w -X github.com/hashicorp/terraform/version.dev=no"
		probe=(version -json) link=yes takes="several minutes" how=copy
		prepare() { patch_terraform "$@"; }
		;;
	versitygw)
		# An S3-compatible server over a posix directory: the S3 store's
		# end-to-end tests and benchmarks run against it on loopback. Its
		# go.mod has replace directives. Cold: a few minutes.
		name=versitygw version="${VERSITYGW_VERSION:-v1.8.0}" module=github.com/versity/versitygw
		main=./cmd/versitygw ldflags="-s -w"
		probe=(--version) link=yes takes="a few minutes" how=copy
		;;
	fake-gcs-server)
		# A Google Cloud Storage emulator: the GCS store's tests run
		# against it on loopback. v1.56.1 checks ifGenerationMatch (0
		# included) on every upload, which is every conditional write of
		# the store (internal/store/gcsstore/gcstest says what it does not
		# prove). No replace directives. Cold: a minute or two.
		name=fake-gcs-server version="${FAKE_GCS_VERSION:-v1.56.1}" module=github.com/fsouza/fake-gcs-server
		ldflags="-s -w" probe=(-help) link=yes takes="a minute or two" how=install
		;;
	azurite-blob)
		# Azure's storage emulator, blob service only: the Azure store's
		# tests run it on loopback, in memory, telemetry off. A Node
		# program from the npm registry. Cold: a minute.
		name=Azurite version="${AZURITE_VERSION:-3.37.0}" module=azurite
		binary=node_modules/.bin/azurite-blob probe=(--version) link=yes takes="a minute" how=npm
		;;
	goreleaser)
		# `make release-snapshot` and .ci/release-check.sh use it; the
		# release workflow uses the same version through goreleaser-action.
		# Cold: several minutes.
		name=goreleaser version="${GORELEASER_VERSION:-v2.16.0}" module=github.com/goreleaser/goreleaser/v2
		ldflags="-s -w -X main.version=$version"
		probe=(--version) link=no takes="several minutes" how=install
		;;
	time-provider)
		# The one provider of the real-provider tier that ../shared/providers
		# does not hold; internal/realproviders installs it into the tests'
		# filesystem mirror from here, under the version without its v. A
		# plugin has no version flag; -help exits 0. Cold: a minute or two.
		name="the hashicorp/time provider" version="${TIME_PROVIDER_VERSION:-v0.14.2}"
		module=github.com/hashicorp/terraform-provider-time binary=terraform-provider-time
		ldflags="-s -w" probe=(-help) link=no takes="a minute or two" how=install
		;;
	conftest)
		# The policy tool teams already run on `show -json`: the plan JSON
		# test (wrapper/e2e/e2e_planjson_test.go) proves it reads sponson's
		# unchanged. Cold: a few minutes (OPA and its dependencies).
		name=conftest version="${CONFTEST_VERSION:-v0.71.1}" module=github.com/open-policy-agent/conftest
		ldflags="-s -w" probe=(--version) link=no takes="a few minutes" how=install
		;;
	*)
		echo "usage: $0 tofu|terraform|versitygw|fake-gcs-server|azurite-blob|goreleaser|time-provider|conftest" >&2
		exit 2
		;;
	esac
}

# patch_tofu SRC: the test build of OpenTofu without the remote-state
# backends no test uses (azurerm, consul, cos, gcs, kubernetes, oss, pg),
# whose SDKs (Kubernetes' client, Azure's, Tencent's, Alibaba's, Consul's,
# PostgreSQL's) are a fifth of its packages: a cold build compiles 1,409
# packages instead of 1,783, and every start of the 84 MB binary (115 MB
# whole) initialises fewer of them (a plan of ten resources took 57 ms of CPU
# instead of 69, median of ten). The http backend sponson serves state
# through, local, s3 (sponson adopt's tests read an S3 backend), inmem,
# remote and cloud stay. The cache keeps it where a whole build was
# (engine.CachedTofuPath falls back to that path), with "lean" in the file
# recipe beside it, so a cached whole build is rebuilt once.
patch_tofu() {
	local init="$1/internal/backend/init/init.go" b
	for b in azure consul cos gcs kubernetes oss pg; do
		sed -i "\#internal/backend/remote-state/$b\"#d" "$init"
	done
	sed -i -E '/"(azurerm|consul|cos|gcs|kubernetes|oss|pg)": +func/d' "$init"
	if grep -qE 'remote-state/(azure|consul|cos|gcs|kubernetes|oss|pg)"|backend(Azure|Consul|Cos|GCS|Kubernetes|OSS|Pg)\.' "$init"; then
		echo "could not drop the unused backends from $init" >&2
		exit 1
	fi
}

# patch_terraform SRC: Terraform's remote-state backends (azure, consul, cos,
# gcs, kubernetes, oci, oss, pg, s3) and internal/legacy are nested modules
# that the module zip leaves out, so the copy drops their imports from
# internal/backend/init and their require/replace lines from go.mod. The http,
# local, inmem, remote and cloud backends stay. Sponson never uses an engine
# backend (it passes state through its own store), so the test build is
# complete for what sponson does; it is not a build to hand to users.
patch_terraform() {
	local src=$1 b
	local init="$src/internal/backend/init/init.go"
	for b in azure consul cos gcs kubernetes oci oss pg s3; do
		# The import line names the package path; the map entry names the
		# constructor alias (backendAzure, backendGCS, backendPg, ...).
		sed -i "\#internal/backend/remote-state/$b\"#d" "$init"
		sed -i "\#github.com/hashicorp/terraform/internal/backend/remote-state/$b #d" "$src/go.mod"
	done
	sed -i -E '/return backend(Azure|Consul|Cos|GCS|Kubernetes|OCI|OSS|Pg|S3)\.New\(/d' "$init"
	sed -i '\#github.com/hashicorp/terraform/internal/legacy #d' "$src/go.mod"
	if grep -qE 'remote-state/(azure|consul|cos|gcs|kubernetes|oci|oss|pg|s3)"' "$init"; then
		echo "could not drop the nested-module backends from $init" >&2
		exit 1
	fi
}

# build_copy: the module from the proxy's cache, copied (the cache is
# read-only), patched and built as the main module.
build_copy() {
	local src_dir
	src_dir=$(go mod download -json "$module@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
	if [ -z "$src_dir" ]; then
		echo "could not download $module@$version from the Go module proxy" >&2
		exit 1
	fi
	work=$(mktemp -d) # global: the trap runs after this function returns
	trap 'rm -rf "$work"' EXIT
	cp -r "$src_dir" "$work/src"
	chmod -R u+w "$work/src"
	prepare "$work/src"
	(cd "$work/src" && go build -trimpath -ldflags "$ldflags" -o "$bin.tmp" "$main")
	mv "$bin.tmp" "$bin"
}

build_npm() {
	npm install --no-audit --no-fund --silent --prefix "$cache" "$module@$version"
}

build_install() {
	GOBIN="$cache/tmp" go install -trimpath -ldflags "$ldflags" "$module@$version"
	mv "$cache/tmp/$binary" "$bin"
	rmdir "$cache/tmp"
}

[ $# -eq 1 ] || recipe ""
tool=$1
binary=$tool
recipe "$tool"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/sponson/$tool/$version"
bin="$cache/$binary"

# recipe_id names a recipe that changed what a build of the same version
# holds (patch_tofu): a binary cached by another recipe is built again.
if [ ! -x "$bin" ] || [ "$(cat "$cache/recipe" 2>/dev/null)" != "${recipe_id:-}" ]; then
	echo "building $name $version into $cache (first time only; takes $takes)" >&2
	mkdir -p "$cache"
	"build_$how"
	if [ -n "${recipe_id:-}" ]; then echo "$recipe_id" >"$cache/recipe"; fi
fi
if [ "$link" = yes ]; then
	mkdir -p "$root/.tools/bin"
	ln -sfn "$bin" "$root/.tools/bin/$tool"
fi
"$bin" "${probe[@]}" >/dev/null 2>&1 || { echo "$bin does not run" >&2; exit 1; }
if [ "$link" = yes ]; then
	echo "$root/.tools/bin/$tool -> $bin"
else
	echo "$bin"
fi
