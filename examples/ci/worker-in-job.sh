#!/bin/sh
# Run one agora dispatch inside a CI job's own container, with no agora
# server: the worker runs the sub-agent, prints its lifecycle events on
# stdout (one JSON line each) and exits with the outcome's code.
#
#   worker-in-job.sh SPEC_FILE [WORKSPACE]
#
# Exit codes: 0 finished; 3 the sub-agent asked a question (printed, with
# its options) — the job cannot answer it, so it stops and says so; any
# other code is the dispatch's failure (the event's reason is printed).
set -u
spec=${1:?usage: worker-in-job.sh SPEC_FILE [WORKSPACE]}
workspace=${2:-$PWD}
id=$(sed -n 's/.*"dispatch_id"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$spec" | head -n1)
[ -n "$id" ] || { echo "worker-in-job: $spec has no dispatch_id" >&2; exit 2; }

events=$(mktemp)
trap 'rm -f "$events"' EXIT
AGORA_DISPATCH_ID=$id AGORA_SPEC_FILE=$spec AGORA_WORKSPACE=$workspace \
  agora-worker > "$events"
code=$?
last=$(tail -n 1 "$events")

case "$last" in
  *'"kind":"dispatch.finished"'*)
    echo "agora: $id finished"
    exit 0 ;;
  *'"kind":"dispatch.needs_input"'*)
    # The question (and its options) for whoever reads the job's log; rerun
    # the job with a spec whose "resume" carries the answer to continue.
    echo "agora: $id needs input: $last"
    exit 3 ;;
  *)
    echo "agora: $id did not finish (exit $code): $last" >&2
    [ "$code" -ne 0 ] || code=1
    exit "$code" ;;
esac
