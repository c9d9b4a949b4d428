# shellcheck shell=bash
# lib.sh: what the emulator scripts (dynamodb-local.sh, sqs.sh) share. Source it after setting
# SERVICE (the log prefix) and defining `ours PID` (is PID still the process we started?).

log() { printf '[%s] %s\n' "$SERVICE" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# run CMD...: runs one install step in the background and waits for it, so that when the harness
# stops us (SIGTERM) the EXIT trap can stop the step too instead of leaving it behind.
child=""
run() {
	local rc=0
	"$@" &
	child=$!
	wait "$child" || rc=$?
	child=""
	return "$rc"
}

# pid_alive PID: running and not a zombie (an exited child that PID 1 has not reaped yet counts as
# gone: some inits reap only every few seconds).
pid_alive() {
	local st
	kill -0 "$1" 2>/dev/null || return 1
	st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
	[[ ${st%% *} != Z ]]
}

# stop_recorded PID_FILE: stops the process the file names, if it is still ours (SIGTERM, then
# SIGKILL after 5 s), and removes the file.
stop_recorded() {
	local pid_file=$1 pid
	[[ -f $pid_file ]] || return 0
	pid=$(cat "$pid_file")
	if [[ $pid =~ ^[0-9]+$ ]] && ours "$pid"; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do
			pid_alive "$pid" || break
			sleep 0.1
		done
		if pid_alive "$pid"; then
			log "PID $pid did not stop on SIGTERM within 5s; sending SIGKILL"
			kill -9 "$pid" 2>/dev/null || true
		fi
	fi
	rm -f "$pid_file"
}
