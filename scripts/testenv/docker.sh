#!/usr/bin/env bash
# docker.sh up|down STATE_DIR
# docker.sh engine STATE_DIR [keep]
#
# Gives the tests two Docker engines and the busybox test image on both.
#
#   up    Engine 1 is the one on /var/run/docker.sock: used as it is when it
#         answers, else docker.io is installed if missing and dockerd is
#         started with networking off and the vfs storage driver. Engine 2 is
#         a second dockerd on unix:///run/berth-test/docker2.sock with its own
#         data root, exec root, containerd and pidfile, so that placement
#         tests see two independent hosts. The test image is imported into
#         both (scripts/testenv/test-image.sh).
#         stdout carries only `export NAME=value` lines for the caller to
#         eval; every log line goes to stderr. When this machine cannot run
#         dockerd (not root, no apt-get), it says why on stderr, prints what
#         it has (maybe nothing) and exits 0: the Docker tests then skip
#         locally and fail in CI.
#   down  Stops the dockerds this script started (never one it found
#         running), by the PIDs it recorded, once no other `up` still uses
#         them.
#   engine
#         What `make run` needs (scripts/run-local.sh): an engine on
#         /var/run/docker.sock that stays up for the user's containers. One
#         that answers is used; otherwise, as root with apt-get, docker.io is
#         installed if missing and dockerd started like engine 1 (networking
#         off), its log in STATE_DIR/dockerd.log. Either way it is recorded
#         as the user's (run-engine.pid), so no `down` ever stops it: an
#         engine 1 that an `up` started is taken over. Says what it did on
#         stderr. Without root or apt-get and no engine answering, it says
#         what to install and exits 1. `engine STATE_DIR keep` takes over
#         nothing (for `make run --check`).
#
# Several test runs may share the machine (developers running `make test`
# side by side): each `up` takes a lease named after its STATE_DIR, a later
# `up` reuses engines an earlier one started, and the engines stop with the
# last lease. A lease whose STATE_DIR is gone, or older than three hours,
# counts as released. Data roots are kept (/var/lib/docker and
# /var/lib/berth-test/docker2: the image survives, so a warm `up` is a few
# checks); the second engine's exec root under /run goes with it.
set -euo pipefail

cmd=${1:?usage: docker.sh up|down|engine STATE_DIR}
state=${2:?usage: docker.sh up|down|engine STATE_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

image=${BERTH_TEST_IMAGE:-berth-test/busybox:1}
sock1=unix:///var/run/docker.sock
run_dir=/run/berth-test # engineN.pid (dockerds started here), leases/, lock
sock2=unix://$run_dir/docker2.sock
data2=${BERTH_DOCKER2_DATA_ROOT:-/var/lib/berth-test/docker2}
# Short on purpose: containerd puts its sockets under the exec root, and a
# unix socket path must fit in 108 bytes.
exec2=$run_dir/d2
logs=$state/docker
lease=$run_dir/leases/$(printf '%s' "$(realpath -m "$state")" | md5sum | cut -c1-16)

# Networking off: no bridge, no iptables, nothing leaves loopback.
dockerd_flags=(--storage-driver=vfs --bridge=none --iptables=false --ip-forward=false --ip-masq=false)

log() { echo "docker.sh: $*" >&2; }

answers() { timeout 10 docker -H "$1" version --format '{{.Server.Version}}' >/dev/null 2>&1; }

# ours_alive NAME: the dockerd this script recorded as NAME still runs.
ours_alive() {
	local f=$run_dir/$1.pid pid
	[ -s "$f" ] || return 1
	pid=$(cat "$f")
	# The name check keeps a recycled PID from passing for our dockerd.
	[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ]
}

# recorded_running NAME: the process recorded as NAME still exists. Unlike
# ours_alive it accepts the nohup/setsid that is about to exec dockerd, so
# it can be asked right after start_dockerd.
recorded_running() {
	local f=$run_dir/$1.pid
	[ -s "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null
}

wait_for() { # endpoint logfile [name]
	# With a name, a dockerd recorded under it that dies while we wait
	# (another run's, stopped under us; or one that could not start) ends
	# the wait at once, so the caller may start its own.
	for _ in $(seq 1 240); do
		answers "$1" && return 0
		if [ -n "${3:-}" ] && ! recorded_running "$3"; then
			log "engine at $1 ($3) is no longer running; last lines of $2:"
			tail -n 30 "$2" >&2 2>/dev/null || true
			return 1
		fi
		sleep 0.25
	done
	log "engine at $1 did not answer within 60s; last lines of $2:"
	tail -n 30 "$2" >&2 2>/dev/null || true
	return 1
}

ensure_dockerd() {
	command -v dockerd >/dev/null && command -v docker >/dev/null && return 0
	log "installing docker.io"
	if ! apt-get install -y docker.io >&2; then
		apt-get update >&2
		apt-get install -y docker.io >&2
	fi
}

# detach prefixes dockerd: `make run`'s engine gets its own session
# (setsid, which execs it: $! stays dockerd's), so the Ctrl-C that stops
# berth serve in the terminal does not stop it too.
detach=()

start_dockerd() { # name logfile extra-args...
	local name=$1 logfile=$2
	shift 2
	log "starting $name (log: $logfile)"
	# Detached from our stdout so the caller's $(...) does not wait on it.
	# nohup execs dockerd, so $! is dockerd itself, recorded at once: a
	# `down` after an interrupted `up` still finds it.
	nohup "${detach[@]}" dockerd "${dockerd_flags[@]}" --pidfile "$run_dir/$name.dockerd.pid" "$@" >"$logfile" 2>&1 </dev/null 9>&- &
	echo $! >"$run_dir/$name.pid"
}

up() {
	mkdir -p "$logs"
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		if answers "$sock1" && BERTH_TEST_IMAGE=$image "$here/test-image.sh" "$sock1"; then
			log "not root: using $sock1 only; no second engine, placement tests will skip"
			echo "export BERTH_TEST_DOCKER_HOST=$sock1"
			echo "export BERTH_TEST_IMAGE=$image"
		else
			log "cannot run dockerd here (needs root and apt-get); Docker tests will skip"
		fi
		return 0
	fi
	mkdir -p "$run_dir/leases"
	export DEBIAN_FRONTEND=noninteractive
	# An engine found answering may still go away under us (a run that
	# shares it is killed before its `down`, and whoever ends it stops its
	# dockerds): a second attempt starts our own where none answers.
	local attempt
	for attempt in 1 2 3; do
		if up_once; then
			echo "export BERTH_TEST_DOCKER_HOST=$sock1"
			echo "export BERTH_TEST_DOCKER_HOST2=$sock2"
			echo "export BERTH_TEST_IMAGE=$image"
			return 0
		fi
		log "attempt $attempt of 3 failed (reasons above)"
		sleep 2
	done
	return 1
}

# up_once: one try at both engines and the image; nonzero when any step
# fails. Called where errexit does not apply, so every step says || return.
up_once() {
	local wait1=false wait2=false
	{
		# One `up` or `down` at a time decides what runs.
		flock 9 || return 1
		if answers "$sock1"; then
			log "using the engine on $sock1"
		elif ours_alive engine1; then
			wait1=true # another run's, still starting
		else
			ensure_dockerd || return 1
			start_dockerd engine1 "$logs/engine1.log" -H "$sock1" || return 1
			wait1=true
		fi
		if answers "$sock2"; then
			log "using the engine on $sock2"
		elif ours_alive engine2; then
			wait2=true
		else
			ensure_dockerd || return 1
			mkdir -p "$data2" "$exec2" || return 1
			# Its own containerd namespaces too, in case both daemons end
			# up on one system containerd.
			start_dockerd engine2 "$logs/engine2.log" -H "$sock2" \
				--data-root "$data2" --exec-root "$exec2" \
				--containerd-namespace berth-test2 --containerd-plugins-namespace berth-test2-plugins || return 1
			wait2=true
		fi
		realpath -m "$state" >"$lease" || return 1
	} 9>"$run_dir/lock"
	if $wait1; then wait_for "$sock1" "$logs/engine1.log" engine1 || return 1; fi
	if $wait2; then wait_for "$sock2" "$logs/engine2.log" engine2 || return 1; fi
	BERTH_TEST_IMAGE=$image "$here/test-image.sh" "$sock1" "$sock2" || return 1
}

stop_engine() { # name
	local pid
	ours_alive "$1" || { rm -f "$run_dir/$1.pid"; return 0; }
	pid=$(cat "$run_dir/$1.pid")
	log "stopping $1 (pid $pid)"
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 1 60); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.25
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "$1 did not stop in 15s; killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$run_dir/$1.pid"
}

down() {
	[ -d "$run_dir/leases" ] || return 0
	{
		flock 9
		rm -f "$lease"
		local l
		for l in "$run_dir"/leases/*; do
			[ -e "$l" ] || continue
			if [ ! -d "$(cat "$l")" ] || [ -n "$(find "$l" -mmin +180)" ]; then
				rm -f "$l"
			fi
		done
		if compgen -G "$run_dir/leases/*" >/dev/null; then
			log "engines still used by another test run; leaving them up"
			return 0
		fi
		local ours2=false
		ours_alive engine2 && ours2=true
		stop_engine engine1 &
		stop_engine engine2 &
		wait
		# Runtime state of a dockerd of ours only: a foreign engine on
		# the second socket keeps its exec root.
		if $ours2; then rm -rf "$exec2"; fi
	} 9>"$run_dir/lock"
}

# engine [keep]: see the header. With keep, an engine 1 of a test run's is
# used but not taken over (`make run --check` must leave the tests' engines
# as they are). Its messages speak to the user of `make run`.
engine() {
	local say="make run:" takeover=true
	[ "${1:-}" = keep ] && takeover=false
	if answers "$sock1"; then
		if $takeover && [ -w "$run_dir" ]; then
			{
				flock 9
				if ours_alive engine1; then
					mv "$run_dir/engine1.pid" "$run_dir/run-engine.pid"
					echo "$say using the Docker engine on $sock1 (dockerd pid $(cat "$run_dir/run-engine.pid"), started by a test run; it now stays up after the tests)" >&2
					return 0
				fi
			} 9>"$run_dir/lock"
		fi
		echo "$say using the Docker engine on $sock1 (already running)" >&2
		return 0
	fi
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		cat >&2 <<MSG
$say no Docker engine answers on $sock1, and this machine cannot start one for you
  (that needs root and apt-get, as on Debian). Install Docker and start it, e.g.
    Debian/Ubuntu:  sudo apt-get install -y docker.io && sudo systemctl start docker
    elsewhere:      https://docs.docker.com/engine/install/
  and make sure you may use $sock1 (e.g. the docker group), then make run again.
MSG
		return 1
	fi
	mkdir -p "$state" "$run_dir"
	export DEBIAN_FRONTEND=noninteractive
	local logfile=$state/dockerd.log did="" name=run-engine
	{
		flock 9
		if answers "$sock1"; then
			did="found"
		elif ours_alive run-engine; then
			did="found (still starting)"
		elif ours_alive engine1; then
			did="found (a test run's, still starting)"
			name=engine1
			if $takeover; then
				mv "$run_dir/engine1.pid" "$run_dir/run-engine.pid"
				name=run-engine
			fi
			logfile="(see the test run's log)"
		else
			if ! command -v dockerd >/dev/null || ! command -v docker >/dev/null; then
				echo "$say installing docker.io (apt-get install docker.io)" >&2
				did="installed docker.io and started"
			else
				did="started"
			fi
			ensure_dockerd
			detach=(setsid)
			start_dockerd run-engine "$logfile" -H "$sock1"
		fi
	} 9>"$run_dir/lock"
	wait_for "$sock1" "$logfile"
	local pid
	pid=$(cat "$run_dir/$name.pid" 2>/dev/null || echo "?")
	cat >&2 <<MSG
$say $did a Docker engine on $sock1: dockerd pid $pid, networking off
  (${dockerd_flags[*]}), log $logfile.
  It keeps running after berth stops, for your containers; stop it with: kill $pid
MSG
}

case $cmd in
up) up ;;
down) down ;;
engine) engine "${3:-}" ;;
*)
	echo "usage: docker.sh up|down|engine STATE_DIR" >&2
	exit 2
	;;
esac
