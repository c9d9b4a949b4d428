#!/usr/bin/env bash
# The SQS emulator (fauxqs, from npm) for the tests.
#
#   scripts/testenv/sqs.sh up   STATE_DIR   # install if needed, start, print exports on stdout
#   scripts/testenv/sqs.sh down STATE_DIR   # stop what `up` started with this STATE_DIR
#
# fauxqs is installed, keyed by version, in ${BERTH_CACHE_DIR:-$HOME/.cache/berth}/fauxqs-<version>/ and
# started through its library (buildApp + listen), which lets us turn request logging off, listen on
# 127.0.0.1 only and take a port the kernel picks (port 0), so there is no race for the port.
# Needs Node.js >= 20 and npm (first install only) and curl.
# stdout carries only `export NAME=VALUE` lines; progress goes to stderr, the server's output to
# STATE_DIR/sqs.log.
set -euo pipefail

readonly FAUXQS_VERSION=1.9.2 # 2.x needs Node >= 22.5
# Resolve fauxqs's dependency ranges as they were on this date, so installs are repeatable without a
# lockfile (npm install --before).
readonly NPM_BEFORE=2026-11-29T00:00:00Z
readonly CACHE_ROOT=${BERTH_CACHE_DIR:-$HOME/.cache/berth}
readonly FAUXQS_DIR=$CACHE_ROOT/fauxqs-$FAUXQS_VERSION
readonly START_TIMEOUT=${BERTH_SQS_START_TIMEOUT:-60} # seconds until it must answer

readonly SERVICE=sqs
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { echo "usage: $0 up|down STATE_DIR" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
readonly CMD=$1
readonly STATE_DIR=$2
readonly PID_FILE=$STATE_DIR/sqs.pid
readonly PORT_FILE=$STATE_DIR/sqs.port
readonly LOG_FILE=$STATE_DIR/sqs.log

# The server: fauxqs's Fastify app on 127.0.0.1, port chosen by the kernel and written to PORT_FILE
# (through a rename, so a reader never sees half a number).
# shellcheck disable=SC2016
readonly SERVER_JS='
import { buildApp } from "fauxqs";
import { writeFileSync, renameSync } from "node:fs";
const app = buildApp({ logger: false });
const address = await app.listen({ port: 0, host: "127.0.0.1" });
const port = new URL(address).port;
const file = process.env.BERTH_SQS_PORT_FILE;
writeFileSync(file + ".tmp", port + "\n");
renameSync(file + ".tmp", file);
console.log(`fauxqs listening on ${address}`);
'

# install builds the cache directory in a temporary sibling and renames it into place, so an
# interrupted install never leaves a half-filled cache; two concurrent installs are both fine.
install() {
	if [[ -f $FAUXQS_DIR/node_modules/fauxqs/package.json ]]; then
		return 0
	fi
	command -v npm >/dev/null || die "npm is not installed (needed once to install fauxqs@$FAUXQS_VERSION)"
	local t0 tmp
	t0=$(now)
	mkdir -p "$CACHE_ROOT"
	find "$CACHE_ROOT" -maxdepth 1 -name '.fauxqs-*.tmp.*' -mmin +60 -exec rm -rf {} + 2>/dev/null || true
	tmp=$(mktemp -d "$CACHE_ROOT/.fauxqs-$FAUXQS_VERSION.tmp.XXXXXX")
	chmod 755 "$tmp"
	# shellcheck disable=SC2064
	trap "[[ -z \$child ]] || kill \$child 2>/dev/null; rm -rf '$tmp'" EXIT
	log "installing fauxqs@$FAUXQS_VERSION from npm (~43 MB) into $FAUXQS_DIR"
	echo '{"name":"berth-testenv-fauxqs","private":true}' >"$tmp/package.json"
	if ! run npm install --prefix "$tmp" --no-audit --no-fund --no-update-notifier --loglevel=error \
		--before="$NPM_BEFORE" "fauxqs@$FAUXQS_VERSION" >"$tmp/npm-install.log" 2>&1; then
		cat "$tmp/npm-install.log" >&2
		die "npm install fauxqs@$FAUXQS_VERSION failed"
	fi
	rm -f "$tmp/npm-install.log"
	[[ -f $tmp/node_modules/fauxqs/package.json ]] || die "npm install did not produce node_modules/fauxqs"
	if ! mv -T "$tmp" "$FAUXQS_DIR" 2>/dev/null; then
		# Someone else finished the same install first: theirs is as good as ours.
		[[ -f $FAUXQS_DIR/node_modules/fauxqs/package.json ]] || die "could not move the install into $FAUXQS_DIR"
		rm -rf "$tmp"
	fi
	trap - EXIT
	log "installed in $(since "$t0")s"
}

healthy() { curl -fsS --max-time 2 "http://127.0.0.1:$1/health" 2>/dev/null | grep -q '"ok"'; }

# ours PID: the process is still the fauxqs we started (not a recycled PID).
ours() { pid_alive "$1" && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q -- "--berth-testenv=sqs"; }

up() {
	mkdir -p "$STATE_DIR"
	if [[ -f $PID_FILE ]] && ours "$(cat "$PID_FILE")"; then
		die "already running with PID $(cat "$PID_FILE") for $STATE_DIR"
	fi
	command -v node >/dev/null || die "node is not installed (fauxqs@$FAUXQS_VERSION needs Node.js >= 20)"
	local major
	major=$(node -p 'process.versions.node.split(".")[0]')
	[[ $major -ge 20 ]] || die "node $(node --version) is too old (fauxqs@$FAUXQS_VERSION needs Node.js >= 20)"
	command -v curl >/dev/null || die "curl is not installed (used to check that the emulator answers)"
	install

	local pid t0 port="" deadline
	rm -f "$PORT_FILE"
	t0=$(now)
	# setsid: its own session, so a Ctrl-C in the terminal reaches only the test command and the harness
	# stops this process itself through `down`. The trailing argument only marks the process as ours.
	(cd "$FAUXQS_DIR" && BERTH_SQS_PORT_FILE=$PORT_FILE exec setsid node --input-type=module \
		-e "$SERVER_JS" -- --berth-testenv=sqs </dev/null >"$LOG_FILE" 2>&1) &
	pid=$!
	echo "$pid" >"$PID_FILE"
	# Interrupted while it starts: stop it; `down` then has nothing left to do.
	# shellcheck disable=SC2064
	trap "kill $pid 2>/dev/null; rm -f '$PID_FILE'; exit 143" INT TERM
	deadline=$(($(date +%s) + START_TIMEOUT))
	while pid_alive "$pid" && (($(date +%s) < deadline)); do
		if [[ -z $port && -s $PORT_FILE ]]; then
			port=$(cat "$PORT_FILE")
		fi
		if [[ -n $port ]] && healthy "$port"; then
			trap - INT TERM
			log "listening on 127.0.0.1:$port (PID $pid), ready in $(since "$t0")s; log: $LOG_FILE"
			echo "export AWS_ENDPOINT_URL_SQS=http://127.0.0.1:$port"
			echo "export AWS_ACCESS_KEY_ID=berthtest"
			echo "export AWS_SECRET_ACCESS_KEY=berthtest"
			echo "export AWS_REGION=us-east-1"
			echo "export AWS_EC2_METADATA_DISABLED=true"
			return 0
		fi
		sleep 0.1
	done
	local outcome=timeout
	pid_alive "$pid" || outcome=exited
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -f "$PID_FILE"
	trap - INT TERM
	tail -n 20 "$LOG_FILE" >&2 || true
	die "did not start ($outcome, timeout ${START_TIMEOUT}s); log: $LOG_FILE"
}

down() {
	stop_recorded "$PID_FILE"
	rm -f "$PORT_FILE"
}

case $CMD in
up) up ;;
down) down ;;
*) usage ;;
esac
