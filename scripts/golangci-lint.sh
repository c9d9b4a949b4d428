#!/usr/bin/env bash
# Runs golangci-lint at the version pinned here, with the repository's .golangci.yml:
#   bash scripts/golangci-lint.sh run ./...
# The binary is built from the Go module proxy with `go install` into
# $HOME/.cache/berth/golangci-lint-<version>/ the first time (about a minute on 2 cores) and reused
# after that; a new version is a new directory, so bumping GOLANGCI_LINT_VERSION rebuilds it.
set -euo pipefail

GOLANGCI_LINT_VERSION=${GOLANGCI_LINT_VERSION:-v2.15.0}
dir="$HOME/.cache/berth/golangci-lint-$GOLANGCI_LINT_VERSION"
bin="$dir/golangci-lint"

if [[ ! -x $bin ]]; then
	echo "golangci-lint $GOLANGCI_LINT_VERSION: building into $dir" >&2
	mkdir -p "$dir"
	# GOFLAGS is cleared so that a -mod=vendor or -tags of the caller does not leak into the tool's build.
	GOBIN="$dir" GOFLAGS= go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION"
fi
exec "$bin" "$@"
