#!/usr/bin/env bash
# run-local.sh — what `make run` does: berth serve on this machine.
#
# Needs a Docker engine on /var/run/docker.sock (DOCKER_HOST is not read:
# the config names its hosts). Builds the sample template's image locally if
# it is missing (berth-test/busybox:1, from Debian's busybox-static: no
# registry needed), builds bin/berth and runs
#   berth serve --config testdata/config.example.yml --templates testdata/templates
# in the foreground; Ctrl-C stops it (work in flight finishes or resumes at
# the next start). Extra arguments go to `berth serve`, e.g. --addr.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

sock=/var/run/docker.sock
if ! docker -H "unix://$sock" version >/dev/null 2>&1; then
	cat >&2 <<MSG
make run: no Docker engine answers on $sock.
  Start one, e.g. (Debian, as root): apt-get install -y docker.io && dockerd &
  On a machine without networking for containers:
    dockerd --bridge=none --iptables=false --ip-forward=false --ip-masq=false &
MSG
	exit 1
fi
if ! docker -H "unix://$sock" image inspect berth-test/busybox:1 >/dev/null 2>&1; then
	echo "make run: building the sample image berth-test/busybox:1 (once)" >&2
	bash scripts/testenv/test-image.sh "unix://$sock" >&2
fi
mkdir -p bin
go build -o bin/berth ./cmd/berth
exec ./bin/berth serve --config testdata/config.example.yml --templates testdata/templates "$@"
