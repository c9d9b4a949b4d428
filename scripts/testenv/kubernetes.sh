#!/usr/bin/env bash
# A real Kubernetes control plane for the tests: etcd, kube-apiserver, kube-scheduler and kwok (a
# simulated Node that drives Pod phases), all on 127.0.0.1. No kube-controller-manager: berth makes
# bare Pods, and the one object of a controller the tests need, the namespace's `default`
# ServiceAccount (Pods are refused without it), is created here (a seventh of the control plane's
# packages and one link fewer on a cold machine).
#
#   scripts/testenv/kubernetes.sh build [etcd|kwok|kube]...  # build into the cache (idempotent)
#   scripts/testenv/kubernetes.sh up   STATE_DIR    # build if needed, start, print exports on stdout
#   scripts/testenv/kubernetes.sh down STATE_DIR    # stop what `up` started with this STATE_DIR
#
# Nothing is downloaded but Go modules: the binaries are built from source through the Go module proxy
# and kept, keyed by version, in ${BERTH_CACHE_DIR:-$HOME/.cache/berth}/{kubernetes,etcd,kwok}-<version>/.
# A cold build takes ~8 min on 2 cores; with the binaries kept it costs nothing. Each cache dir is
# filled in a temporary sibling and renamed into place, so an interrupted build leaves nothing half-done.
#
# `up` prints `KUBECONFIG=<path>` on its own line once the API server is ready and the `default`
# ServiceAccount exists (Pods are refused before that), followed by `export BERTH_TEST_KUBECONFIG=<path>`
# for scripts/test-services.sh. Progress goes to stderr, each server's output to STATE_DIR/<name>.log.
# Needs go, openssl and curl.
set -euo pipefail

readonly KUBERNETES_VERSION=1.37.2 # kube-apiserver, kube-scheduler
readonly STAGING_VERSION=0.37.2    # the k8s.io/* staging modules of that release
readonly ETCD_VERSION=3.7.3        # >= 3.5.13: older etcd lacks RequestWatchProgress, informers miss events
readonly KWOK_VERSION=0.8.0
readonly CACHE_ROOT=${BERTH_CACHE_DIR:-$HOME/.cache/berth}
readonly KUBE_DIR=$CACHE_ROOT/kubernetes-$KUBERNETES_VERSION
readonly ETCD_DIR=$CACHE_ROOT/etcd-$ETCD_VERSION
# -uid: built with kwok_uid_delete's fix (the suffix makes a cache built without it build again).
readonly KWOK_DIR=$CACHE_ROOT/kwok-$KWOK_VERSION-uid
readonly START_TIMEOUT=${BERTH_KUBERNETES_START_TIMEOUT:-300} # seconds until the cluster is usable (generous: shared cores)

readonly SERVICE=kubernetes
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
readonly HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() { echo "usage: $0 build | up STATE_DIR | down STATE_DIR" >&2; exit 2; }

# in_tmp_sibling DIR FN: runs FN TMPDIR to fill a fresh temporary sibling of DIR, then renames it to DIR.
# A concurrent build that finished first wins; ours is dropped.
in_tmp_sibling() {
	local dir=$1 fn=$2 tmp
	mkdir -p "$CACHE_ROOT"
	find "$CACHE_ROOT" -maxdepth 1 -name ".$(basename "$dir").tmp.*" -mmin +120 -exec rm -rf {} + 2>/dev/null || true
	tmp=$(mktemp -d "$CACHE_ROOT/.$(basename "$dir").tmp.XXXXXX")
	chmod 755 "$tmp"
	# shellcheck disable=SC2064
	trap "[[ -z \$child ]] || kill \$child 2>/dev/null; rm -rf '$tmp'" EXIT
	"$fn" "$tmp"
	if ! mv -T "$tmp" "$dir" 2>/dev/null; then
		[[ -d $dir/bin ]] || die "could not move the build into $dir"
		rm -rf "$tmp"
	fi
	trap - EXIT
}

# The control plane. `go install k8s.io/kubernetes/cmd/...@v` refuses modules with replace directives,
# so a wrapper module requires k8s.io/kubernetes and points each staging module it replaces with
# ./staging/src/k8s.io/<name> at the published k8s.io/<name> of the same release instead. The list is
# read from k8s.io/kubernetes's own go.mod, so a version bump needs no edits here.
build_kube_into() {
	local dir=$1 gomod
	mkdir -p "$dir/src" "$dir/bin"
	log "fetching k8s.io/kubernetes@v$KUBERNETES_VERSION's go.mod"
	gomod=$(cd "$dir/src" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@v$KUBERNETES_VERSION" |
		sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
	[[ -f $gomod ]] || die "go mod download gave no go.mod for k8s.io/kubernetes@v$KUBERNETES_VERSION"
	{
		echo "module berth.test/kubernetes-build"
		echo
		echo "go $(go env GOVERSION | sed 's/^go\([0-9]*\.[0-9]*\).*/\1/')"
		echo
		echo "require k8s.io/kubernetes v$KUBERNETES_VERSION"
		echo
		echo "replace ("
		sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\)[[:space:]]*=>[[:space:]]*\./staging/.*$#\t\1 => \1 v'"$STAGING_VERSION"'#p' "$gomod"
		echo ")"
	} >"$dir/src/go.mod"
	local n
	n=$(grep -c "=> k8s.io/" "$dir/src/go.mod" || true)
	((n > 20)) || die "found only $n staging modules in k8s.io/kubernetes's go.mod ($gomod)"
	log "wrapper module with $n staging replacements: $dir/src/go.mod"
	cat >"$dir/src/tools.go" <<'EOF'
//go:build tools

// Package tools only names the commands this module builds, so that `go mod tidy` keeps their
// dependencies.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
EOF
	(cd "$dir/src" && run go mod tidy) || die "go mod tidy in the wrapper module failed"
	local v=k8s.io/component-base/version
	log "building kube-apiserver, kube-scheduler v$KUBERNETES_VERSION (cold: ~15 min on 2 cores)"
	(cd "$dir/src" && run go build -trimpath -o "$dir/bin/" \
		-ldflags "-s -w -X $v.gitVersion=v$KUBERNETES_VERSION -X $v.gitMajor=${KUBERNETES_VERSION%%.*} -X $v.gitMinor=$(echo "$KUBERNETES_VERSION" | cut -d. -f2) -X $v.gitTreeState=clean" \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler) || die "building the control plane failed"
}

# etcd ships no `go install`-able main at a module root, so a ten-line main calls etcdmain.Main.
build_etcd_into() {
	local dir=$1
	mkdir -p "$dir/src" "$dir/bin"
	cat >"$dir/src/main.go" <<'EOF'
// Command etcd is etcd's own server entry point, built here so the tests get a current etcd.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOF
	printf 'module berth.test/etcd-build\n\ngo %s\n\nrequire go.etcd.io/etcd/server/v3 v%s\n' \
		"$(go env GOVERSION | sed 's/^go\([0-9]*\.[0-9]*\).*/\1/')" "$ETCD_VERSION" >"$dir/src/go.mod"
	log "building etcd v$ETCD_VERSION (cold: ~3 min)"
	(cd "$dir/src" && run go mod tidy && run go build -trimpath -ldflags "-s -w" -o "$dir/bin/etcd" .) ||
		die "building etcd failed"
}

# kwok_uid_delete SRC: kwok deletes a Pod by its name alone. A delete it queued for a Pod (its
# pod-delete stage, queued again by each update of a Pod being deleted) can then run after that Pod
# is gone and a new one has its name, and delete the new one: a stop then start (berth makes the Pod
# again under its name) lost its Pod about once in sixty loaded runs. This makes the delete in the
# module's source copy SRC conditional on the UID of the Pod it was queued for, as a kubelet's is.
kwok_uid_delete() {
	local f=$1/pkg/kwok/controllers/pod_controller.go
	sed -i 's/Delete(ctx, pod.Name, deleteOpt)/Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: deleteOpt.GracePeriodSeconds, Preconditions: metav1.NewUIDPreconditions(string(pod.UID))})/' "$f"
	grep -q 'NewUIDPreconditions(string(pod.UID))' "$f" ||
		die "kwok v$KWOK_VERSION: the Pod delete to make conditional is not where expected in $f"
}

build_kwok_into() {
	local dir=$1
	mkdir -p "$dir/bin"
	log "building kwok v$KWOK_VERSION (cold: ~3 min)"
	# Built from a writable copy of the module (what `go install …@v$KWOK_VERSION` builds, with the
	# same go.mod), because kwok_uid_delete changes one file of it.
	local mod src=$dir/src
	mod=$(cd "$dir" && run go mod download -json "sigs.k8s.io/kwok@v$KWOK_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	[[ -n $mod && -d $mod ]] || die "downloading kwok failed"
	cp -r "$mod" "$src" && chmod -R u+w "$src"
	kwok_uid_delete "$src"
	(cd "$src" && GOFLAGS=-mod=mod run go build -trimpath -ldflags "-s -w" -o "$dir/bin/kwok" ./cmd/kwok) ||
		die "building kwok failed"
	rm -rf "$src"
	# kwok standalone has no stages: keep the module's own (Pods become Running, deleted Pods go, Nodes
	# become Ready) beside the binary.
	mod=$(go env GOMODCACHE)/sigs.k8s.io/kwok@v$KWOK_VERSION/kustomize/stage
	mkdir -p "$dir/stages"
	cp "$mod/pod/fast/pod-ready.yaml" "$mod/pod/fast/pod-delete.yaml" "$mod/node/fast/node-initialize.yaml" \
		"$dir/stages/" || die "kwok's stage files are not in $mod"
}

# build [etcd|kwok|kube]...: builds what is not in the cache yet (default: all three).
build() {
	command -v go >/dev/null || die "go is not installed (needed to build the control plane)"
	local t0 what=" ${*:-etcd kwok kube} "
	t0=$(now)
	if [[ $what == *" etcd "* && ! -x $ETCD_DIR/bin/etcd ]]; then in_tmp_sibling "$ETCD_DIR" build_etcd_into; fi
	if [[ $what == *" kwok "* && ! -x $KWOK_DIR/bin/kwok ]]; then in_tmp_sibling "$KWOK_DIR" build_kwok_into; fi
	if [[ $what == *" kube "* && ! -x $KUBE_DIR/bin/kube-scheduler ]]; then in_tmp_sibling "$KUBE_DIR" build_kube_into; fi
	log "binaries ready in $(since "$t0")s"
}

# ---- up / down ----------------------------------------------------------------------------------

# The processes `up` starts, in start order; `down` stops them in reverse.
readonly PROCS=(etcd kube-apiserver kube-scheduler kwok)
# The namespace berth's tests use, and the node kwok simulates.
readonly TEST_NAMESPACE=berth
readonly NODE_NAME=kwok-node-0

# ours PID: the process is still one we started for this STATE_DIR (every one of them has the
# directory in its command line).
ours() { pid_alive "$1" && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$STATE_DIR/"; }

# free_port: a loopback port nothing listens on now (etcd and the API server take no port 0), below
# the kernel's ephemeral range, so that no outgoing connection (of the tests or the other services
# starting beside this one) can take it between this check and the server's bind.
free_port() {
	local p lo=32768
	read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
	((lo > 21024)) || lo=32768
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % (lo - 20000)))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	die "no free port found"
}

# start_apiserver ETCD_PORT PKI: kube-apiserver on API_PORT.
start_apiserver() {
	local etcd_port=$1 pki=$2
	start kube-apiserver "$KUBE_DIR/bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
		--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT" \
		--endpoint-reconciler-type none --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
		--client-ca-file "$pki/ca.crt" --token-auth-file "$STATE_DIR/tokens.csv" --authorization-mode RBAC \
		--service-account-issuer https://kubernetes.default.svc --service-account-key-file "$pki/sa.pub" \
		--service-account-signing-key-file "$pki/sa.key" --service-cluster-ip-range 10.96.0.0/24 \
		--allow-privileged=false --profiling=false --cert-dir "$STATE_DIR/apiserver-certs" \
		--disable-admission-plugins TaintNodesByCondition
}

# start NAME BIN ARGS...: runs a server in its own session (a Ctrl-C in the terminal reaches only the
# test command; the harness stops it through `down`), output to STATE_DIR/NAME.log.
start() {
	local name=$1
	shift
	setsid "$@" </dev/null >"$STATE_DIR/$name.log" 2>&1 &
	echo $! >"$STATE_DIR/$name.pid"
}

# wait_for NAME DEADLINE CMD...: until CMD succeeds, while NAME's process lives.
wait_for() {
	local name=$1 deadline=$2
	shift 2
	local pid
	pid=$(cat "$STATE_DIR/$name.pid")
	until "$@" >/dev/null 2>&1; do
		if ! pid_alive "$pid"; then
			tail -n 30 "$STATE_DIR/$name.log" >&2 || true
			die "$name exited while starting; log: $STATE_DIR/$name.log"
		fi
		if (($(date +%s) >= deadline)); then
			tail -n 30 "$STATE_DIR/$name.log" >&2 || true
			die "$name did not become ready within ${START_TIMEOUT}s; log: $STATE_DIR/$name.log"
		fi
		sleep 0.2
	done
}

# api METHOD PATH [BODY [CONTENT-TYPE]]: a call to the API server as the admin.
api() {
	local args=(-fsS --max-time 10 --cacert "$STATE_DIR/pki/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN"
		-X "$1" "https://127.0.0.1:$API_PORT$2")
	if [[ $# -ge 3 ]]; then
		args+=(-H "Content-Type: ${4:-application/json}" --data-binary "$3")
	fi
	curl "${args[@]}"
}

# node_ready: kwok has given the simulated node its conditions.
node_ready() { api GET "/api/v1/nodes/$NODE_NAME" | grep -Eq '"type": ?"Ready"'; }

certs() {
	local pki=$STATE_DIR/pki
	mkdir -p "$pki"
	(
		cd "$pki"
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=berth-test-ca -keyout ca.key -out ca.crt
		openssl req -newkey rsa:2048 -nodes -subj /CN=kube-apiserver -keyout apiserver.key -out apiserver.csr
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default.svc\n' >san.ext
		openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile san.ext \
			-out apiserver.crt
		openssl genrsa -out sa.key 2048
		openssl rsa -in sa.key -pubout -out sa.pub
	) >"$STATE_DIR/pki.log" 2>&1 || { cat "$STATE_DIR/pki.log" >&2; die "openssl failed"; }
}

# kubeconfig USER TOKEN NAMESPACE: a kubeconfig file for one of the static tokens.
kubeconfig() {
	local file=$STATE_DIR/$1.kubeconfig
	cat >"$file" <<EOK
apiVersion: v1
kind: Config
clusters:
- name: berth-test
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $(base64 -w0 "$STATE_DIR/pki/ca.crt")
users:
- name: $1
  user:
    token: $2
contexts:
- name: $1
  context: {cluster: berth-test, user: $1, namespace: $3}
current-context: $1
EOK
	chmod 600 "$file"
	echo "$file"
}

# objects creates what the tests use: the namespace and its `default` ServiceAccount (a controller
# manager's work on a full cluster), berth's Role there (the one docs/kubernetes.md gives,
# docs/kubernetes-role.yaml) bound to the restricted user `berth`, and the simulated Node.
objects() {
	api POST /api/v1/namespaces "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$TEST_NAMESPACE\"}}" >/dev/null
	api POST "/api/v1/namespaces/$TEST_NAMESPACE/serviceaccounts" \
		'{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}' >/dev/null
	api POST "/apis/rbac.authorization.k8s.io/v1/namespaces/$TEST_NAMESPACE/roles" \
		"$(cat "$HERE/../../docs/kubernetes-role.yaml")" application/yaml >/dev/null
	api POST "/apis/rbac.authorization.k8s.io/v1/namespaces/$TEST_NAMESPACE/rolebindings" \
		'{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"berth"},
		  "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"berth"},
		  "subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"berth"}]}' >/dev/null
	# Room for many Pods and a GPU; labels the tests' node selectors and constraints use.
	api POST /api/v1/nodes "{\"apiVersion\":\"v1\",\"kind\":\"Node\",
		\"metadata\":{\"name\":\"$NODE_NAME\",\"annotations\":{\"kwok.x-k8s.io/node\":\"fake\"},
		  \"labels\":{\"kubernetes.io/hostname\":\"$NODE_NAME\",\"type\":\"kwok\",\"berth.test/zone\":\"a\"}},
		\"status\":{\"allocatable\":{\"cpu\":\"32\",\"memory\":\"256Gi\",\"pods\":\"1000\",\"nvidia.com/gpu\":\"4\"},
		  \"capacity\":{\"cpu\":\"32\",\"memory\":\"256Gi\",\"pods\":\"1000\",\"nvidia.com/gpu\":\"4\"}}}" >/dev/null
}

up() {
	mkdir -p "$STATE_DIR"
	local p
	for p in "${PROCS[@]}"; do
		if [[ -f $STATE_DIR/$p.pid ]] && ours "$(cat "$STATE_DIR/$p.pid")"; then
			die "already running ($p, PID $(cat "$STATE_DIR/$p.pid")) for $STATE_DIR"
		fi
	done
	for tool in openssl curl base64 setsid; do
		command -v "$tool" >/dev/null || die "$tool is not installed"
	done
	build
	# Interrupted or failed while starting: stop what has started.
	trap 'down; exit 143' INT TERM
	trap 'rc=$?; if ((rc != 0)); then down; fi' EXIT
	local t0 deadline
	t0=$(now)
	deadline=$(($(date +%s) + START_TIMEOUT))
	certs
	ADMIN_TOKEN=$(openssl rand -hex 16)
	BERTH_TOKEN=$(openssl rand -hex 16)
	printf '%s,admin,admin,system:masters\n%s,berth,berth\n' "$ADMIN_TOKEN" "$BERTH_TOKEN" >"$STATE_DIR/tokens.csv"
	chmod 600 "$STATE_DIR/tokens.csv"

	local etcd_port peer_port
	etcd_port=$(free_port)
	peer_port=$(free_port)
	start etcd "$ETCD_DIR/bin/etcd" --name berth-test --data-dir "$STATE_DIR/etcd" \
		--listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
		--listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
		--initial-cluster "berth-test=http://127.0.0.1:$peer_port" --unsafe-no-fsync --log-level warn
	wait_for etcd "$deadline" curl -fsS --max-time 2 "http://127.0.0.1:$etcd_port/health"

	local pki=$STATE_DIR/pki attempt
	# A port can still be taken between free_port and the bind (another listener picking at random):
	# the API server then exits at once saying so, and is started again on another port.
	for attempt in 1 2 3; do
		API_PORT=$(free_port)
		start_apiserver "$etcd_port" "$pki"
		until api GET /readyz >/dev/null 2>&1 || ! pid_alive "$(cat "$STATE_DIR/kube-apiserver.pid")" ||
			(($(date +%s) >= deadline)); do
			sleep 0.2
		done
		if ((attempt < 3)) && ! pid_alive "$(cat "$STATE_DIR/kube-apiserver.pid")" &&
			grep -q 'address already in use' "$STATE_DIR/kube-apiserver.log"; then
			log "port $API_PORT was taken before kube-apiserver could bind it; trying another"
			continue
		fi
		break
	done
	wait_for kube-apiserver "$deadline" api GET /readyz
	log "kube-apiserver ready on 127.0.0.1:$API_PORT in $(since "$t0")s"

	local admin berth
	admin=$(kubeconfig admin "$ADMIN_TOKEN" "$TEST_NAMESPACE")
	berth=$(kubeconfig berth "$BERTH_TOKEN" "$TEST_NAMESPACE")
	# No HTTPS of its own (--secure-port 0: nothing to collide on between runs). No node lifecycle
	# controller runs (no controller manager), so no TaintNodesByCondition admission above: the not-ready
	# taint it puts on a new node is that controller's to lift.
	start kube-scheduler "$KUBE_DIR/bin/kube-scheduler" --kubeconfig "$admin" --secure-port 0 --leader-elect=false
	local stages=() f
	for f in "$KWOK_DIR"/stages/*.yaml "$HERE"/kwok/*.yaml; do
		stages+=(--config "$f")
	done
	start kwok "$KWOK_DIR/bin/kwok" --kubeconfig "$admin" --manage-all-nodes=true --server-address "" \
		--node-ip 127.0.0.1 "${stages[@]}"
	objects
	wait_for kwok "$deadline" node_ready
	for p in kube-scheduler kwok; do
		pid_alive "$(cat "$STATE_DIR/$p.pid")" || { tail -n 30 "$STATE_DIR/$p.log" >&2; die "$p exited; log: $STATE_DIR/$p.log"; }
	done
	trap - INT TERM EXIT
	log "control plane ready in $(since "$t0")s (namespace $TEST_NAMESPACE, node $NODE_NAME); logs: $STATE_DIR"
	echo "KUBECONFIG=$admin"
	echo "export BERTH_TEST_KUBECONFIG=$berth"
	echo "export BERTH_TEST_KUBE_ADMIN_KUBECONFIG=$admin"
	echo "export BERTH_TEST_KUBE_NAMESPACE=$TEST_NAMESPACE"
}

down() {
	local i
	for ((i = ${#PROCS[@]} - 1; i >= 0; i--)); do
		stop_recorded "$STATE_DIR/${PROCS[i]}.pid"
	done
	rm -rf "$STATE_DIR/etcd"
}

case ${1:-} in
build)
	shift
	build "$@"
	;;
up | down)
	[[ $# -eq 2 ]] || usage
	readonly STATE_DIR=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
	"$1"
	;;
*) usage ;;
esac
