#!/usr/bin/env bash
# test-image.sh ENDPOINT...
#
# Makes sure each Docker engine given (unix:///... or tcp://...) has the
# busybox test image ($BERTH_TEST_IMAGE, default berth-test/busybox:1). No registry is reachable
# here, so the image is built locally: busybox-static from Debian's archive,
# one binary plus a link per applet, imported as a single-layer image whose
# default command is `sh`.
#
# The extracted root file system is cached as a tarball under
# $HOME/.cache/berth/ so that a second engine, or the next run, only pays for
# the `docker import`. Everything is logged to stderr; stdout stays empty.
set -euo pipefail

[ $# -gt 0 ] || { echo "usage: test-image.sh ENDPOINT..." >&2; exit 2; }
image=${BERTH_TEST_IMAGE:-berth-test/busybox:1}
cache_dir=${BERTH_CACHE_DIR:-$HOME/.cache/berth}
rootfs_tar=$cache_dir/busybox-rootfs.tar

log() { echo "test-image: $*" >&2; }

has_image() { docker -H "$1" image inspect "$image" >/dev/null 2>&1; }

missing=()
for endpoint in "$@"; do
	if has_image "$endpoint"; then
		log "$image already present on $endpoint"
	else
		missing+=("$endpoint")
	fi
done
[ ${#missing[@]} -gt 0 ] || exit 0

build_rootfs() {
	local work
	work=$(mktemp -d)
	chmod 755 "$work" # apt's download user must be able to write there
	# shellcheck disable=SC2064 # expand $work now: it is local.
	trap "rm -rf '$work'" RETURN
	log "downloading busybox-static"
	# apt-get download writes into the current directory.
	if ! (cd "$work" && apt-get -o APT::Sandbox::User=root download busybox-static >&2); then
		log "busybox-static not found; refreshing the package lists"
		apt-get update >&2
		(cd "$work" && apt-get -o APT::Sandbox::User=root download busybox-static >&2)
	fi
	dpkg -x "$work"/busybox-static_*.deb "$work/pkg"
	local root=$work/root
	mkdir -p "$root/bin" "$root/tmp" "$root/etc" "$root/proc" "$root/sys" "$root/dev" "$root/root"
	chmod 1777 "$root/tmp"
	cp "$work/pkg/bin/busybox" "$root/bin/busybox"
	# One link per applet, so `sh`, `sleep`, `echo`, `true`, `false`, `head`,
	# `dd`, … resolve as commands inside containers.
	local applet
	for applet in $("$root/bin/busybox" --list); do
		[ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
	mkdir -p "$cache_dir"
	tar -C "$root" -cf "$rootfs_tar.tmp" .
	mv "$rootfs_tar.tmp" "$rootfs_tar"
	log "cached root file system at $rootfs_tar"
}

[ -s "$rootfs_tar" ] || build_rootfs

import() { # endpoint
	log "importing $image into $1"
	docker -H "$1" import \
		-c 'ENV PATH=/bin' \
		-c 'CMD ["sh"]' \
		"$rootfs_tar" "$image" >/dev/null
	log "$image ready on $1"
}

# All engines at once: each writes its own layer.
pids=()
for endpoint in "${missing[@]}"; do
	import "$endpoint" &
	pids+=($!)
done
for pid in "${pids[@]}"; do
	wait "$pid"
done
