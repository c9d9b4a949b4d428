# berth — build, test and lint.
#
#   make build   Lambda bootstraps for every functions/<fn>/ into dist/<fn>/bootstrap (linux/arm64)
#   make test    all Go tests, with DynamoDB Local, the SQS emulator, Docker and Kubernetes started around
#                them, then the CDK app's (infra/; `make test INFRA=` skips them)
#   make synth   the CDK stack's CloudFormation template into infra/cdk.out/ (offline; builds first)
#   make bench   all benchmarks, same services (BENCH=regexp BENCHTIME=1s|100x PKGS=./internal/...)
#   make chaos   the long chaos runs of berth serve and of the emulated AWS stack (BERTH_CHAOS_SEED=n replays a
#                run, BERTH_CHAOS_OPS=n sizes it) and the long bind-isolation property run (BERTH_BINDS_SEED=n replays it)
#   make lint    gofmt + go vet + docs' references (scripts/docrefs) + golangci-lint (.golangci.yml) + cfn-lint template.yaml (when installed)
#   make build-<LogicalId> ARTIFACTS_DIR=dir   one function of template.yaml (what `sam build` calls)
#   make run     berth serve on this machine: API on http://127.0.0.1:8080 (ARGS="--addr 127.0.0.1:9090"); starts a Docker engine if none answers
#   make emulate the SAM stack of template.yaml on this machine: API on http://$EMULATE_ADDR (default 127.0.0.1:3000)
#   make clean   remove build and coverage output
#
# Services: scripts/test-services.sh starts what the tests need unless AWS_ENDPOINT_URL_DYNAMODB,
# AWS_ENDPOINT_URL_SQS or BERTH_TEST_DOCKER_HOST already point somewhere; see that script.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

GO ?= go
PKGS ?= ./...
# go test starts the packages it is given in that order, -p (TEST_P) at a time. For the whole tree the
# longest (measured in a warm run) start first, so that the suite does not end with one long package
# started late while the other slots run the small ones; the rest follow in go's order (./... lists none
# twice). docs/performance.md, The test suite.
SLOW_PKGS := ./internal/emulate ./cmd/berth ./internal/worker ./internal/reconcile ./internal/runtime/docker \
	./internal/store/dynamostore ./functions/worker
TEST_PKGS = $(if $(filter ./...,$(PKGS)),$(SLOW_PKGS) $(PKGS),$(PKGS))
# Packages tested at once; defaults to 2 (GOMAXPROCS here). On 2 cores the suite is CPU-bound (both
# cores 90% busy over a warm run, the engines' and DynamoDB Local's work included), so more at once
# moves little, and at 3 the chaos runs' webhook lag bounds (TestServeChaos 20 s) failed once in two
# quiet runs (docs/performance.md, The test suite).
TEST_P ?= 2
# Extra flags for `go test`, e.g. GOTESTFLAGS='-run TestX -v'.
GOTESTFLAGS ?=
# The race detector is on wherever cgo has a C compiler (`make test RACE=` turns it off). Measured on
# 2 cores: +6 s to compile the dependencies cold, +~1 s warm for today's tests. GORACE's default 1 s
# sleep at the exit of every test binary is switched off.
RACE ?= $(shell command -v "$$($(GO) env CC)" >/dev/null 2>&1 && [ "$$($(GO) env CGO_ENABLED)" = 1 ] && echo -race)
export GORACE ?= atexit_sleep_ms=0
# go test links every package's test binary again on each run; without DWARF (-w; stack traces keep
# their files and lines) a link takes a quarter less CPU (cmd/berth's, race: 8.4 → 6.4 CPU-s), and the
# suite is CPU-bound on 2 cores (docs/performance.md, The test suite). `make test TEST_LDFLAGS=` keeps it.
TEST_LDFLAGS ?= -ldflags=-w
# Each package's bound, its builds included (internal/emulate builds the stack's functions before its tests):
# no test bounds a build tighter than this, and a warm package takes minutes, so it is wide enough for a
# cold build on a slow machine while a hang still fails within CI's time.
TEST_TIMEOUT ?= 45m
BENCH ?= .
BENCHTIME ?= 1s
BENCHCOUNT ?= 1

SERVICES := bash scripts/test-services.sh

# The CDK app (infra/) is its own Go module. Its first build compiles the CDK's Go bindings
# (minutes on 2 cores, ~1 GB of RAM) and its first synth unpacks aws-cdk-lib for jsii (~210 MB);
# both stay cached under $(HOME)/.cache (go-build, aws/jsii), so later runs take seconds.
# infra/ takes the table definitions and defaults from the main module (a replace): -mod=mod lets
# a dependency added there reach infra/go.sum without breaking these targets first.
INFRA ?= infra
INFRA_ENV := JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 GOFLAGS="$$($(GO) env GOFLAGS) -mod=mod"

# Every directory under functions/ is one Lambda function (package main); none yet is fine.
FUNCTIONS := $(sort $(patsubst functions/%/,%,$(wildcard functions/*/)))
BOOTSTRAPS := $(FUNCTIONS:%=dist/%/bootstrap)
LAMBDA_GOENV := GOOS=linux GOARCH=arm64 CGO_ENABLED=0
LAMBDA_FLAGS := -tags lambda.norpc -trimpath -ldflags "-s -w"

.PHONY: help build test test-infra synth bench chaos lint run emulate clean FORCE

help:
	@sed -n 's/^#   make /make /p' $(firstword $(MAKEFILE_LIST))

build: $(BOOTSTRAPS)
	@echo "build: $(words $(FUNCTIONS)) function(s) in dist/$(if $(FUNCTIONS),: $(FUNCTIONS))"

# FORCE: always ask go build, whose own cache knows whether anything changed.
dist/%/bootstrap: FORCE
	@mkdir -p $(@D)
	$(LAMBDA_GOENV) $(GO) build $(LAMBDA_FLAGS) -o $@ ./functions/$*

# SAM (BuildMethod: makefile) calls `make build-<LogicalId>` with ARTIFACTS_DIR set: each of
# template.yaml's functions maps to its functions/<fn> directory here (both workers run functions/worker).
# template_test.go checks that every function in the template has its target.
SAM_FUNCTIONS := ApiFunction:api DispatcherFunction:dispatcher CreateWorkerFunction:worker \
	LifecycleWorkerFunction:worker ReconcilerFunction:reconciler WatcherFunction:watcher \
	LogsFunction:logs NotifyFunction:notify ExecFunction:exec

define sam_build_target
.PHONY: build-$(1)
build-$(1):
	@if [[ -z "$$(ARTIFACTS_DIR)" ]]; then echo "build-$(1): ARTIFACTS_DIR is not set (sam build sets it)"; exit 1; fi
	@mkdir -p "$$(ARTIFACTS_DIR)"
	$$(LAMBDA_GOENV) $$(GO) build $$(LAMBDA_FLAGS) -o "$$(ARTIFACTS_DIR)/bootstrap" ./functions/$(2)
endef
$(foreach f,$(SAM_FUNCTIONS),$(eval $(call sam_build_target,$(word 1,$(subst :, ,$(f))),$(word 2,$(subst :, ,$(f))))))

test:
	$(SERVICES) $(GO) test -count=1 -p $(TEST_P) -timeout $(TEST_TIMEOUT) $(RACE) $(TEST_LDFLAGS) $(GOTESTFLAGS) $(TEST_PKGS)
	$(if $(INFRA),$(MAKE) --no-print-directory test-infra)

# No -race: the tests drive jsii from one goroutine, and the race build of the CDK bindings
# would take many minutes more.
test-infra:
	cd $(INFRA) && $(INFRA_ENV) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(GOTESTFLAGS) ./...

synth: build
	cd $(INFRA) && $(INFRA_ENV) CDK_OUTDIR=cdk.out $(GO) run .
	@ls $(INFRA)/cdk.out/*.template.json

bench:
	$(SERVICES) $(GO) test -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) -count $(BENCHCOUNT) -benchmem -timeout 60m $(GOTESTFLAGS) $(PKGS)

# The short run of the same test is part of `make test`.
chaos:
	$(SERVICES) $(GO) test -count=1 -timeout 60m -run '^(TestServeChaos|TestServeBindsProperty)$$' -v $(GOTESTFLAGS) ./cmd/berth -chaos.long
	$(SERVICES) $(GO) test -count=1 -timeout 60m -run '^TestEmulateChaos$$' -v $(GOTESTFLAGS) ./internal/emulate -chaos.long
	BERTH_RACE_ROUNDS=600 $(SERVICES) $(GO) test -count=1 -timeout 30m -run '^(TestExpiryRaces|TestRetentionRaces|TestRestartRaces)$$' -v $(GOTESTFLAGS) ./internal/manager

lint:
	@unformatted=$$(find . -name '*.go' -not -path './.git/*' -not -path './dist/*' -not -path '*/node_modules/*' -not -path './cdk.out/*' -print0 | xargs -0 -r gofmt -l); \
	if [[ -n $$unformatted ]]; then echo "gofmt: these files need \`gofmt -w\`:"; echo "$$unformatted"; exit 1; fi
	@# With the tests' -race: vet compiles every dependency for its export data, and with the same
	@# flags those compiles are the ones `make test` then finds in the build cache (a cold .ci/run
	@# compiles the dependencies once, not once per flag set).
	$(GO) vet $(RACE) $(PKGS)
	@# Every path, Go file, package-qualified name and section the docs (README.md, docs/*.md) name exists.
	$(GO) run ./scripts/docrefs
	@# Pinned in scripts/golangci-lint.sh, built into $$HOME/.cache/berth/ on first use.
	bash scripts/golangci-lint.sh run $(PKGS)
	@# cfn-lint (with aws-sam-translator) comes with the machine image, not from a registry: skipped
	@# where absent, any error fails the lint where present (exit code 4 is warnings only).
	@if command -v cfn-lint >/dev/null 2>&1; then \
		echo "cfn-lint template.yaml"; rc=0; cfn-lint template.yaml || rc=$$?; \
		if (( rc != 0 && rc != 4 )); then exit $$rc; fi; \
	else echo "cfn-lint: not installed; template.yaml not linted (template_test.go still checks it)"; fi
	$(if $(INFRA),cd $(INFRA) && $(INFRA_ENV) $(GO) vet ./...)

run:
	bash scripts/run-local.sh $(ARGS)

# Every function of template.yaml under the Lambda RIE, with DynamoDB Local, the SQS emulator, the event
# source mappings, schedules and the HTTP API (cmd/berth-emulate). BERTH_CONFIG names the Docker hosts,
# container: keys and auth.tokens (default testdata/config.example.yml); ARGS="--schedule-every 10s".
emulate:
	bash scripts/emulate.sh $(ARGS)

clean:
	rm -rf dist/ bin/ $(INFRA)/cdk.out coverage.out coverage.html cover.out *.coverprofile
