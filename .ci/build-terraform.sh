#!/usr/bin/env bash
# Builds the pinned HashiCorp Terraform from the Go module proxy into a cache
# outside the checkout, and links it as .tools/bin/terraform, so the e2e tier
# can run against both engines (no HashiCorp release download is needed).
#
# Terraform's remote-state backends (azure, consul, cos, gcs, kubernetes, oci,
# oss, pg, s3) and internal/legacy are nested modules that the module zip
# leaves out, so the copy drops their imports from internal/backend/init and
# their require/replace lines from go.mod before building. The http, local,
# inmem, remote and cloud backends stay. Sponson never uses an engine backend
# (it passes state through its own store), so the test build is complete for
# what sponson does; it is not a build to hand to users.
# A cold build takes 4-15 minutes on two cores; a warm one returns at once.
set -euo pipefail

version="${TERRAFORM_VERSION:-v1.13.3}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/sponson/terraform/$version"
bin="$cache/terraform"
root="$(cd "$(dirname "$0")/.." && pwd)"
dropped="azure consul cos gcs kubernetes oci oss pg s3"

if [ ! -x "$bin" ]; then
	echo "building HashiCorp Terraform $version into $cache (first time only; takes several minutes)" >&2
	mkdir -p "$cache"
	src_dir=$(go mod download -json "github.com/hashicorp/terraform@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
	if [ -z "$src_dir" ]; then
		echo "could not download github.com/hashicorp/terraform@$version from the Go module proxy" >&2
		exit 1
	fi
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	cp -r "$src_dir" "$work/src"
	chmod -R u+w "$work/src"
	init="$work/src/internal/backend/init/init.go"
	for b in $dropped; do
		# The import line names the package path; the map entry names the
		# constructor alias (backendAzure, backendGCS, backendPg, ...).
		sed -i "\#internal/backend/remote-state/$b\"#d" "$init"
		sed -i "\#github.com/hashicorp/terraform/internal/backend/remote-state/$b #d" "$work/src/go.mod"
	done
	sed -i -E '/return backend(Azure|Consul|Cos|GCS|Kubernetes|OCI|OSS|Pg|S3)\.New\(/d' "$init"
	sed -i '\#github.com/hashicorp/terraform/internal/legacy #d' "$work/src/go.mod"
	if grep -qE 'remote-state/(azure|consul|cos|gcs|kubernetes|oci|oss|pg|s3)"' "$init"; then
		echo "could not drop the nested-module backends from $init" >&2
		exit 1
	fi
	(cd "$work/src" && go build -trimpath -ldflags "-s -w -X github.com/hashicorp/terraform/version.dev=no" -o "$bin.tmp" .)
	mv "$bin.tmp" "$bin"
fi
mkdir -p "$root/.tools/bin"
ln -sfn "$bin" "$root/.tools/bin/terraform"
"$bin" version -json >/dev/null 2>&1 || { echo "$bin does not run" >&2; exit 1; }
echo "$root/.tools/bin/terraform -> $bin"
