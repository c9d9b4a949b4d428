#!/usr/bin/env bash
# run-local.sh — what `make run` does: berth serve on this machine.
#
#   scripts/run-local.sh [--check] [berth serve arguments...]
#
# Does its own set-up, saying what it did: a Docker engine on
# /var/run/docker.sock (DOCKER_HOST is not read: the config names its hosts)
# is used when one answers; otherwise, as root on Debian, docker.io is
# installed if missing and dockerd started as the test scripts start theirs
# (networking off: scripts/testenv/docker.sh engine), and left running for
# your containers; elsewhere it says what to install. Then it builds the
# sample template's image if it is missing (berth-test/busybox:1, from
# Debian's busybox-static: no registry needed), builds bin/berth and runs
#   berth serve --config testdata/config.example.yml --templates testdata/templates
# in the foreground; Ctrl-C stops it (work in flight finishes or resumes at
# the next start). Extra arguments go to `berth serve`, e.g. --addr.
# --check does the set-up only (taking over no test run's engine) and exits.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

check=false
if [ "${1:-}" = --check ]; then
	check=true
	shift
fi

sock=unix:///var/run/docker.sock
keep=""
$check && keep=keep
bash scripts/testenv/docker.sh engine .berth $keep
if docker -H "$sock" image inspect berth-test/busybox:1 >/dev/null 2>&1; then
	echo "make run: the sample image berth-test/busybox:1 is on the engine" >&2
else
	echo "make run: building the sample image berth-test/busybox:1 (once)" >&2
	bash scripts/testenv/test-image.sh "$sock" >&2
fi
if $check; then
	echo "make run: set-up done (--check: berth serve not started)" >&2
	exit 0
fi
mkdir -p bin
go build -o bin/berth ./cmd/berth
exec ./bin/berth serve --config testdata/config.example.yml --templates testdata/templates "$@"
