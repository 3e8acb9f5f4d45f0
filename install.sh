#!/bin/sh
# Installs the sponson CLI (which also serves the sponson provider to the
# engine) from a release of github.com/sponson/terraform-provider-sponson.
#
#   curl -fsSL https://raw.githubusercontent.com/sponson/terraform-provider-sponson/v0.1.0/install.sh | sh -s -- --version 0.1.0
#
# Options (or the environment variables beside them):
#   --version V     SPONSON_VERSION   the release to install, e.g. 0.1.0 or
#                                     v0.1.0; "latest" (the default) asks the
#                                     release page which one that is
#   --prefix DIR    SPONSON_PREFIX    installs DIR/bin/sponson (default
#                                     /usr/local; sudo only when DIR is not
#                                     writable)
#   --base-url URL  SPONSON_BASE_URL  where the releases are (default
#                                     https://github.com/sponson/terraform-provider-sponson/releases):
#                                     files are read from URL/download/v<V>/,
#                                     "latest" from the redirect of URL/latest;
#                                     a file:// URL or a plain directory is a
#                                     mirror on disk (air-gapped), laid out
#                                     the same, which needs --version
#   --gpg-key FILE  SPONSON_GPG_KEY   the release's public key (armored): the
#                                     signature of the checksum file is then
#                                     checked with gpg and required
#
# It downloads sponson_<V>_<os>_<arch>.tar.gz and the release's
# terraform-provider-sponson_<V>_SHA256SUMS, checks the signature of that
# file (its .sig, made by the release's GPG key) when gpg is installed and
# the key is known, and says so when it is not, checks the archive against
# its checksum before unpacking anything, and moves the binary into place in
# one rename, so a sponson that is running (or a failed install) never sees a
# half-written file. Exit codes: 0 installed, 1 failed, 2 refused (usage,
# unsupported platform, unknown version).
set -eu

releases_default="https://github.com/sponson/terraform-provider-sponson/releases"
version="${SPONSON_VERSION:-latest}"
prefix="${SPONSON_PREFIX:-/usr/local}"
base="${SPONSON_BASE_URL:-$releases_default}"
gpg_key="${SPONSON_GPG_KEY:-}"

say() { printf 'sponson install: %s\n' "$*" >&2; }
die() { code=$1; shift; say "error: $*"; exit "$code"; }

while [ $# -gt 0 ]; do
	case "$1" in
	--version) [ $# -ge 2 ] || die 2 "--version needs a value"; version=$2; shift 2 ;;
	--version=*) version=${1#*=}; shift ;;
	--prefix) [ $# -ge 2 ] || die 2 "--prefix needs a value"; prefix=$2; shift 2 ;;
	--prefix=*) prefix=${1#*=}; shift ;;
	--base-url) [ $# -ge 2 ] || die 2 "--base-url needs a value"; base=$2; shift 2 ;;
	--base-url=*) base=${1#*=}; shift ;;
	--gpg-key) [ $# -ge 2 ] || die 2 "--gpg-key needs a value"; gpg_key=$2; shift 2 ;;
	--gpg-key=*) gpg_key=${1#*=}; shift ;;
	-h | --help) sed -n '2,35p' "$0" 2>/dev/null | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die 2 "unknown argument $1 (see --help)" ;;
	esac
done
base=${base%/}
[ -n "$prefix" ] || die 2 "--prefix is empty"
if [ -n "$gpg_key" ] && [ ! -r "$gpg_key" ]; then
	die 2 "--gpg-key $gpg_key is not a readable file"
fi

# A mirror on disk: file:///path, or a directory path. Its files are copied,
# not downloaded.
local_base=""
case "$base" in
file://localhost/*) local_base=${base#file://localhost} ;;
file:///*) local_base=${base#file://} ;;
file://*) die 2 "--base-url $base: a file URL names a local path (file:///path)" ;;
*://*) ;;
*) local_base=$base ;;
esac
if [ -n "$local_base" ] && [ ! -d "$local_base" ]; then
	die 2 "--base-url $base is not a directory"
fi

# The release names platforms as Go does.
platform() {
	case "$(uname -s)" in
	Linux) os=linux ;;
	Darwin) os=darwin ;;
	*) os="" ;;
	esac
	case "$(uname -m)" in
	x86_64 | amd64) arch=amd64 ;;
	aarch64 | arm64 | armv8*) arch=arm64 ;;
	*) arch="" ;;
	esac
	if [ -z "$os" ] || [ -z "$arch" ]; then
		die 2 "unsupported platform $(uname -s)/$(uname -m): releases are built for Linux and macOS on x86_64 and arm64; elsewhere build from source with: go install github.com/sponson/terraform-provider-sponson/wrapper/cmd/sponson@v<version>"
	fi
}

# fetch URL FILE: 0 downloaded, 4 the server has no such file, 1 other failures.
# Under a mirror on disk, URL is a path under it and the file is copied.
fetch() {
	if [ -n "$local_base" ]; then
		[ -f "$1" ] || return 4
		cp "$1" "$2" || return 1
		return 0
	fi
	if command -v curl >/dev/null 2>&1; then
		status=$(curl -sSL --retry 3 -o "$2" -w '%{http_code}' "$1") || return 1
	elif command -v wget >/dev/null 2>&1; then
		if wget -q -O "$2" "$1"; then status=200; else status=$?; [ "$status" -eq 8 ] && status=404; fi
	else
		die 1 "neither curl nor wget is installed"
	fi
	case "$status" in
	200) return 0 ;;
	404) return 4 ;;
	*) say "$1 answered HTTP $status"; return 1 ;;
	esac
}

# latest asks the release page which release is the newest: GitHub redirects
# URL/latest to URL/tag/v<version>.
latest() {
	[ -z "$local_base" ] || die 2 "a mirror on disk ($base) has no latest redirect; pass --version"
	command -v curl >/dev/null 2>&1 || die 2 "finding the latest release needs curl; pass --version"
	url=$(curl -sSL --retry 3 -o /dev/null -w '%{url_effective}' "$base/latest") || die 1 "could not reach $base/latest"
	tag=${url##*/tag/}
	if [ "$tag" = "$url" ] || [ -z "$tag" ]; then
		die 2 "$base/latest did not lead to a release (it went to $url); pass --version"
	fi
	printf '%s\n' "$tag"
}

sha256() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d' ' -f1
	elif command -v shasum >/dev/null 2>&1; then
		shasum -a 256 "$1" | cut -d' ' -f1
	else
		die 1 "no sha256sum or shasum to verify the download with"
	fi
}

platform
if [ "$version" = latest ]; then
	version=$(latest) || exit $?
fi
version=${version#v}
case "$version" in
"" | *[!0-9A-Za-z.+-]*) die 2 "version '$version' is not a release number like 0.1.0" ;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sponson-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

dir="${local_base:-$base}/download/v$version"
sums="terraform-provider-sponson_${version}_SHA256SUMS"
archive="sponson_${version}_${os}_${arch}.tar.gz"

say "downloading sponson $version for $os/$arch from $dir"
rc=0
fetch "$dir/$sums" "$tmp/$sums" || rc=$?
case $rc in
0) ;;
4) die 2 "there is no release $version: $dir/$sums does not exist (releases: $base)" ;;
*) die 1 "could not download $dir/$sums" ;;
esac
rc=0
fetch "$dir/$archive" "$tmp/$archive" || rc=$?
case $rc in
0) ;;
4) die 2 "release $version has no $archive" ;;
*) die 1 "could not download $dir/$archive" ;;
esac

# The checksum file's signature, when it can be checked: gpg and the
# release's public key (--gpg-key). Asked for and impossible is a refusal;
# not asked for, a note that only the checksum was checked.
verify_signature() {
	if [ -z "$gpg_key" ]; then
		if command -v gpg >/dev/null 2>&1; then
			say "the signature of $sums is not checked: the release's public key is not known (--gpg-key FILE or SPONSON_GPG_KEY); the archive is still checked against $sums"
		else
			say "the signature of $sums is not checked: gpg is not installed; the archive is still checked against $sums"
		fi
		return 0
	fi
	if ! command -v gpg >/dev/null 2>&1 || ! command -v gpgv >/dev/null 2>&1; then
		die 1 "--gpg-key was given but gpg (with gpgv) is not installed: cannot check the signature of $sums; nothing was installed"
	fi
	rc=0
	fetch "$dir/$sums.sig" "$tmp/$sums.sig" || rc=$?
	case $rc in
	0) ;;
	4) die 1 "release $version has no signature $sums.sig, and --gpg-key asks for one; nothing was installed" ;;
	*) die 1 "could not download $dir/$sums.sig" ;;
	esac
	# A keyring of its own that holds only the release's key, so that the
	# signature must be that key's whatever the user's keyring trusts;
	# gpgv checks it without starting an agent, in a home of its own (the
	# user's trustedkeys are not asked). An armored key is made binary
	# first, a binary one taken as it is.
	mkdir -m 700 "$tmp/gnupg"
	if ! GNUPGHOME="$tmp/gnupg" gpg --batch --quiet --dearmor <"$gpg_key" >"$tmp/release.gpg" 2>/dev/null; then
		cp "$gpg_key" "$tmp/release.gpg"
	fi
	if ! GNUPGHOME="$tmp/gnupg" gpgv --keyring "$tmp/release.gpg" --status-fd 3 "$tmp/$sums.sig" "$tmp/$sums" 3>"$tmp/gpg.status" 2>"$tmp/gpg.log" ||
		! grep -q '^\[GNUPG:\] VALIDSIG ' "$tmp/gpg.status"; then
		die 1 "the signature of $sums does not verify with $gpg_key: $(tr '\n' ' ' <"$tmp/gpg.log"); nothing was installed"
	fi
	say "the signature of $sums verifies with $gpg_key"
}
verify_signature

want=$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1 }' "$tmp/$sums")
[ -n "$want" ] || die 1 "$sums lists no checksum for $archive; nothing was installed"
got=$(sha256 "$tmp/$archive")
[ "$got" = "$want" ] || die 1 "checksum mismatch for $archive: $sums says $want, the download is $got; nothing was installed"

mkdir "$tmp/x"
tar -xzf "$tmp/$archive" -C "$tmp/x" sponson || die 1 "$archive holds no sponson binary"
"$tmp/x/sponson" version >/dev/null 2>&1 || die 1 "the downloaded sponson does not run on this machine"

# Root only when the prefix needs it, and never silently.
bindir="$prefix/bin"
as_root=""
if ! mkdir -p "$bindir" 2>/dev/null || [ ! -w "$bindir" ]; then
	if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then
		say "$bindir is not writable: using sudo"
		as_root=sudo
		sudo mkdir -p "$bindir"
	else
		die 1 "cannot write to $bindir; pass --prefix \"\$HOME/.local\" to install for this user"
	fi
fi

# A new name in the same directory, then one rename over the old binary.
new="$bindir/.sponson.new.$$"
if ! { $as_root cp "$tmp/x/sponson" "$new" && $as_root chmod 0755 "$new" && $as_root mv -f "$new" "$bindir/sponson"; }; then
	$as_root rm -f "$new"
	die 1 "could not move sponson into $bindir"
fi

say "installed $bindir/sponson ($("$bindir/sponson" version))"
case ":${PATH}:" in
*":$bindir:"*) ;;
*) say "$bindir is not on PATH; add it, or run $bindir/sponson" ;;
esac
