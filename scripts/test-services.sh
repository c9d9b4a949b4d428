#!/usr/bin/env bash
# shellcheck disable=SC2317 # cleanup and on_signal run from traps
# Run a command with the real parts the tests need: DynamoDB Local, the SQS emulator, Docker engines and a
# Kubernetes control plane.
#
#   scripts/test-services.sh CMD [ARG...]        e.g. scripts/test-services.sh go test ./...
#
# For each part whose variable is already set in the environment, that value is used and nothing is
# started (point them at your own servers to save the start-up):
#   dynamodb-local  AWS_ENDPOINT_URL_DYNAMODB   scripts/testenv/dynamodb-local.sh
#   sqs             AWS_ENDPOINT_URL_SQS        scripts/testenv/sqs.sh
#   docker          BERTH_TEST_DOCKER_HOST      scripts/testenv/docker.sh (skipped if the script is absent)
#   kubernetes      BERTH_TEST_KUBECONFIG       scripts/testenv/kubernetes.sh (etcd, kube-apiserver,
#                                               kube-scheduler and kwok; the first run builds them from
#                                               source, ~8 min on 2 cores, then cached)
# Otherwise the part's script is run as `SCRIPT up STATE_DIR` (all parts in parallel) and the
# `export NAME=VALUE` lines it prints are loaded. A part that cannot start is reported loudly on stderr
# and the command still runs: tests that need the part skip locally and fail in CI (internal/testenv).
# When the command ends (or on Ctrl-C / SIGTERM) every part started here is stopped with
# `SCRIPT down STATE_DIR`, and the command's exit status is returned.
#
# BERTH_TEST_SERVICES="dynamodb-local sqs" limits which parts may be started (default: all four).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [[ $# -eq 0 ]]; then
	echo "usage: $0 CMD [ARG...]" >&2
	exit 2
fi

log() { printf '[test-services] %s\n' "$*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
loud() {
	local line
	printf '\n%s\n' '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!' >&2
	for line in "$@"; do printf '!!! %s\n' "$line" >&2; done
	printf '%s\n\n' '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!' >&2
}

# name  variable-that-means-it-is-there  script
parts=(
	"dynamodb-local AWS_ENDPOINT_URL_DYNAMODB $here/testenv/dynamodb-local.sh"
	"sqs AWS_ENDPOINT_URL_SQS $here/testenv/sqs.sh"
	"docker BERTH_TEST_DOCKER_HOST $here/testenv/docker.sh"
	"kubernetes BERTH_TEST_KUBECONFIG $here/testenv/kubernetes.sh"
)
wanted=" ${BERTH_TEST_SERVICES:-dynamodb-local sqs docker kubernetes} "

state=$(mktemp -d "${TMPDIR:-/tmp}/berth-test-services.XXXXXX")
declare -A script_of=() up_pid=() parts_by_name=()
started=() # parts whose `up` ran (or runs): each gets a `down`
failed=()
keep_state=""
phase=up
cmd_pid=""
in_wait=""
cmd_rc=""

cleanup() {
	local rc=$?
	trap '' INT TERM
	local name pid t0 pids=()
	t0=$(now)
	# `up` still running (interrupted during start-up): stop it; it stops what it has started.
	for name in "${!up_pid[@]}"; do
		kill -TERM "${up_pid[$name]}" 2>/dev/null || true
	done
	for name in "${!up_pid[@]}"; do
		wait "${up_pid[$name]}" 2>/dev/null || true
	done
	for name in "${started[@]}"; do
		bash "${script_of[$name]}" down "$state/$name" &
		pids+=($!)
	done
	for pid in "${pids[@]}"; do
		wait "$pid" || keep_state=1
	done
	if ((${#started[@]} > 0)); then
		log "stopped ${started[*]} in $(since "$t0")s"
	fi
	if [[ -n $keep_state || $rc -ne 0 ]]; then
		log "service logs kept in $state"
	else
		rm -rf "$state"
	fi
	exit "$rc"
}

on_signal() { # SIGNAL STATUS
	if [[ $phase == cmd && -n $cmd_pid ]]; then
		# The command usually got it too (Ctrl-C signals the whole foreground group); make sure.
		kill -s "$1" "$cmd_pid" 2>/dev/null || true
		in_wait=1
		return
	fi
	log "interrupted while starting the services"
	exit "$2"
}

trap cleanup EXIT
trap 'on_signal INT 130' INT
trap 'on_signal TERM 143' TERM

t_setup=$(now)
for entry in "${parts[@]}"; do
	read -r name var script <<<"$entry"
	script_of[$name]=$script
	parts_by_name[$name]=$entry
	if [[ -n ${!var:-} ]]; then
		log "$name: using $var=${!var} from the environment"
		continue
	fi
	if [[ $wanted != *" $name "* ]]; then
		log "$name: not started (BERTH_TEST_SERVICES=${BERTH_TEST_SERVICES:-})"
		continue
	fi
	if [[ ! -f $script ]]; then
		loud "$name: scripts/${script#"$here/"} does not exist, so $var is not set." \
			"Tests that need $name will SKIP here and FAIL in CI (CI=true)."
		failed+=("$name")
		continue
	fi
	mkdir -p "$state/$name"
	bash "$script" up "$state/$name" >"$state/$name.env" &
	up_pid[$name]=$!
	started+=("$name")
done

for name in "${started[@]}"; do
	wait "${up_pid[$name]}"
	rc=$?
	unset "up_pid[$name]"
	if ((rc != 0)); then
		loud "$name could not start (${script_of[$name]##*/} up exited $rc; its reasons are above)." \
			"Tests that need $name will SKIP here and FAIL in CI (CI=true)." \
			"Logs: $state/$name/"
		failed+=("$name")
		keep_state=1
		continue
	fi
	while IFS= read -r line; do
		if [[ $line =~ ^export\ [A-Za-z_][A-Za-z0-9_]*= ]]; then
			eval "$line"
		elif [[ $line =~ ^KUBECONFIG= ]]; then
			log "$name: $line (admin; the tests use BERTH_TEST_KUBECONFIG)"
		elif [[ -n $line ]]; then
			log "$name: ignoring a line that is not an export: $line"
		fi
	done <"$state/$name.env"
	read -r _ var _ <<<"${parts_by_name[$name]}"
	if [[ -z ${!var:-} ]]; then
		loud "$name did not come up: ${script_of[$name]##*/} up gave no $var (its reasons are above)." \
			"Tests that need $name will SKIP here and FAIL in CI (CI=true)."
		failed+=("$name")
	fi
done

summary=""
for entry in "${parts[@]}"; do
	read -r name var _ <<<"$entry"
	summary+=" $var=${!var:-<unset>}"
done
log "ready in $(since "$t_setup")s:$summary"
if ((${#failed[@]} > 0)); then
	log "NOT available: ${failed[*]} (see the messages above)"
fi

# The command runs in the background so that signals reach the traps at once; `trap - INT QUIT`
# undoes bash's ignoring of SIGINT for background jobs, so a Ctrl-C still reaches it directly.
phase=cmd
(trap - INT QUIT; exec "$@") &
cmd_pid=$!
while :; do
	in_wait=""
	wait "$cmd_pid"
	cmd_rc=$?
	[[ -n $in_wait ]] || break
done
exit "$cmd_rc"
