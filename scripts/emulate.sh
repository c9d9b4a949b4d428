#!/usr/bin/env bash
# emulate.sh — what `make emulate` does: berth's SAM stack (template.yaml) on this machine.
#
# Builds bin/berth-emulate and runs it in the foreground with the config at $BERTH_CONFIG (default
# testdata/config.example.yml) and the sample templates of testdata/templates; the API answers at
# http://$EMULATE_ADDR (default 127.0.0.1:3000) once it prints "API on ...". DynamoDB Local and the SQS
# emulator are started with scripts/testenv/ (unless AWS_ENDPOINT_URL_DYNAMODB / AWS_ENDPOINT_URL_SQS
# name running ones); Ctrl-C or SIGTERM stops everything it started. Extra arguments go to
# berth-emulate, e.g. --schedule-every 10s or --parameter CreateQueueMaxConcurrency=2.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export BERTH_CONFIG=${BERTH_CONFIG:-testdata/config.example.yml}
if [[ ! -f template.yaml ]]; then
	echo "make emulate: no template.yaml in $(pwd)" >&2
	exit 1
fi
# The sample template's image, on the engines of the config that are local sockets.
for sock in $(sed -n 's|^[[:space:]]*endpoint:[[:space:]]*unix://\([^[:space:]]*\).*|\1|p' "$BERTH_CONFIG"); do
	if ! docker -H "unix://$sock" version >/dev/null 2>&1; then
		cat >&2 <<MSG
make emulate: no Docker engine answers on $sock (a host of $BERTH_CONFIG).
  Start one, e.g. (Debian, as root): apt-get install -y docker.io && dockerd &
  On a machine without networking for containers:
    dockerd --bridge=none --iptables=false --ip-forward=false --ip-masq=false &
MSG
		exit 1
	fi
	if ! docker -H "unix://$sock" image inspect berth-test/busybox:1 >/dev/null 2>&1; then
		echo "make emulate: building the sample image berth-test/busybox:1 on $sock (once)" >&2
		bash scripts/testenv/test-image.sh "unix://$sock" >&2
	fi
done
mkdir -p bin
go build -o bin/berth-emulate ./cmd/berth-emulate
exec ./bin/berth-emulate --template template.yaml --templates testdata/templates "$@"
