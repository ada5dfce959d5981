#!/usr/bin/env bash
# Builds stormctl from this checkout into a temporary directory, removed at
# the end, and runs `stormctl bench NAME` with the remaining flags. The
# scripts bench/append.sh and bench/forensics.sh call it; usage:
#
#   bench/run.sh NAME [flag]...
set -euo pipefail
name=$1
shift
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/stormctl" ./cmd/stormctl
if ! "$tmp/stormctl" bench "$name" --help >/dev/null 2>&1; then
  echo "bench/$name.sh: this stormctl has no 'bench' command (NewCmdBench is not in NewCmdRoot)" >&2
  exit 2
fi
"$tmp/stormctl" bench "$name" "$@"
