#!/usr/bin/env bash
# Run stormctl's storm workflow (.github/workflows/storm.yml, which calls
# storm-gate.yml, which runs action.yml) on this machine under act
# (github.com/nektos/act), its jobs on the host (-self-hosted), so that the
# whole gate runs as on GitHub: the plan's matrix, four shard jobs, the
# artifacts between them (act's artifact server), the gate job's merge,
# base-storm lookup, gates, job summary and sticky comment.
#
#   internal/ghaction/act/run.sh dispatch    # a dispatch on main: stores the base storm
#   internal/ghaction/act/run.sh pr 7        # a push to pull request 7, labelled storm
#
# What GitHub itself serves is stood in for, each said in its file:
# actions/checkout (standin/checkout: clones the commit from a local
# clone), marocchino/sticky-pull-request-comment (standin/sticky-comment:
# a file per pull request) and the gh CLI (bin/gh: the stored base storms
# and comments). Everything else is the real thing: act runs the workflow
# files and action.yml as written, with the actions they pin, and stormctl
# builds and storms as in CI. It runs the HEAD commit of this checkout
# (uncommitted changes are not in it).
#
# Environment:
#   ACT                  the act binary (default: act on PATH; install with
#                        go install github.com/nektos/act@v0.2.89)
#   ACTIONS_DIR          a directory of the pinned actions, as
#                        OWNER/NAME@REF/ (actions/setup-go@v5, ...), for a
#                        machine that cannot fetch them from GitHub
#   STORMCTL_ACT_STATE   the stand-ins' state and act's caches (default
#                        ${TMPDIR:-/tmp}/stormctl-act); the comments are in
#                        its comments/, gh's calls in gh.log
#   NODE_VERSION         the Node.js the workflow asks for (default 22): when
#                        the host has another, its node stands in for it, said
#                        on stderr
# Exit status: act's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(git -C "$here" rev-parse --show-toplevel)
act=${ACT:-act}
state=${STORMCTL_ACT_STATE:-${TMPDIR:-/tmp}/stormctl-act}
repository=stormctl/stormctl

usage() {
  echo "usage: $0 dispatch | pr NUMBER" >&2
  exit 2
}
if ! command -v "$act" >/dev/null 2>&1; then
  echo "act not found: go install github.com/nektos/act@v0.2.89 (or set ACT)" >&2
  exit 2
fi
mkdir -p "$state/git" "$state/runs" "$state/comments" "$state/cache/tool_cache"

# The commit to run, in a clone whose origin names the repository (act
# takes github.repository from it).
rm -rf "$state/repo"
git clone -q "$root" "$state/repo"
git -C "$state/repo" remote set-url origin "https://github.com/$repository.git"
sha=$(git -C "$state/repo" rev-parse HEAD)
echo "$state/repo" > "$state/git/${repository//\//+}"

# act runs setup-go and setup-node against a tool cache of its own: the
# host's Go and Node.js stand in for the versions the workflow asks for.
go_version=$(awk '$1 == "go" {print $2; exit}' "$root/go.mod")
mkdir -p "$state/cache/tool_cache/go/$go_version"
ln -sfn "$(go env GOROOT)" "$state/cache/tool_cache/go/$go_version/x64"
touch "$state/cache/tool_cache/go/$go_version/x64.complete"
node_version=${NODE_VERSION:-22}
if command -v node >/dev/null 2>&1; then
  host_node=$(node --version)
  case $host_node in
  v"$node_version".*) ;;
  *) echo "run.sh: the host's node $host_node stands in for the Node.js $node_version the workflow asks for" >&2 ;;
  esac
  node_dir="$state/cache/tool_cache/node/$node_version.0.0/x64"
  mkdir -p "$node_dir/bin"
  for b in node npm npx corepack; do
    if command -v "$b" >/dev/null 2>&1; then ln -sfn "$(command -v "$b")" "$node_dir/bin/$b"; fi
  done
  touch "$node_dir.complete"
fi

event="$state/event.json"
case "${1:-}" in
dispatch)
  name=workflow_dispatch
  cat > "$event" <<JSON
{"ref":"refs/heads/main","repository":{"full_name":"$repository","default_branch":"main"},
 "inputs":{"worlds":"local","scenarios":"step-storm,hook-storm,control","conditions":"","runs":"4",
           "engine":"model","devkit_channel":"stable","devkit_ref":""}}
JSON
  ;;
pr)
  [ -n "${2:-}" ] || usage
  name=pull_request
  cat > "$event" <<JSON
{"action":"synchronize","number":$2,
 "pull_request":{"number":$2,"head":{"sha":"$sha","ref":"storm-under-act"},"base":{"ref":"main"},"labels":[{"name":"storm"}]},
 "repository":{"full_name":"$repository","default_branch":"main"}}
JSON
  ;;
*) usage ;;
esac

local_actions=(
  --local-repository "actions/checkout@v4=$here/standin/checkout"
  --local-repository "marocchino/sticky-pull-request-comment@v2=$here/standin/sticky-comment"
)
if [ -n "${ACTIONS_DIR:-}" ]; then
  for dir in "$ACTIONS_DIR"/*/*@*/; do
    dir=${dir%/}
    # act copies the directory itself: a symlink's target, not the link
    local_actions+=(--local-repository "${dir#"$ACTIONS_DIR"/}=$(cd "$dir" && pwd -P)")
  done
  local_actions+=(--action-offline-mode)
fi

rm -rf "$state/artifacts"
status=0
(cd "$state/repo" && PATH="$here/bin:$PATH" "$act" "$name" -W .github/workflows/storm.yml -e "$event" \
  -P ubuntu-latest=-self-hosted --action-cache-path "$state/cache" \
  --artifact-server-path "$state/artifacts" "${local_actions[@]}" \
  --env STORMCTL_ACT_STATE="$state" -s GITHUB_TOKEN=act-local-token) || status=$?

# A run on main stores its merged storm where the next pull request's gate
# looks for the base branch's storm (bin/gh), as GitHub keeps its artifact.
if [ "$name" = workflow_dispatch ] && [ "$status" = 0 ]; then
  merged=$(find "$state/artifacts" -mindepth 2 -maxdepth 2 -type d -name storm-merged | head -1)
  if [ -n "$merged" ]; then
    run="$state/runs/main/$(date +%s)"
    mkdir -p "$run"
    cp -r "$merged" "$run/storm-merged"
    # act's artifact server keeps upload-artifact v4's upload as one
    # NAME.zip (gh run download unzips it), v3's files gzip-encoded as
    # NAME.gz__
    find "$run" -name '*.zip' | while read -r f; do unzip -q -o "$f" -d "$(dirname "$f")" && rm "$f"; done
    find "$run" -name '*.gz__' | while read -r f; do gunzip -c "$f" > "${f%.gz__}" && rm "$f"; done
    echo "run.sh: the merged storm is stored as main's: $run" >&2
  fi
fi
exit "$status"
