#!/bin/sh
# A CI step that hands work to a shared agora server (`agora serve`, or
# `agora orchestrator` with runners) and never hangs: the sub-agent's
# question goes to a person (`agora answer` from a terminal, the Slack bot,
# the web page) for 15 minutes, then the question's default is taken (the
# answer is marked assumed) and the same sub-agent resumes with it.
#
#   AGORA_SERVER=https://agora.internal AGORA_TOKEN="$CI_SECRET" pipeline-step.sh
#
# where the server runs with --token "ci:$CI_SECRET": a client sends the
# SECRET alone, never the NAME: in front of it (the server refuses that).
#
# Exit codes of `agora dispatch --wait`, passed on as the step's:
#   0 finished, 1 failed (or the server cannot be reached or refused),
#   2 a mistake on the command line or bad input (nothing was submitted),
#   3 expired or cancelled, 130/143 interrupted by SIGINT/SIGTERM (the
#   task is cancelled then; --detach-on-signal leaves it running).
# AGORA_ROUTE overrides the route (the tests use a short one).
set -eu

# The sub-agent: round 1 asks with a default; round 2 gets the answer in
# AGORA_ANSWER. A real one runs a script or Claude Code the same way.
subagent='if [ -z "${AGORA_ANSWER:-}" ]; then
  agora-worker ask "Publish the release notes or keep them as a draft?" --option publish --option draft --default draft
  exit 0
fi
echo "release notes: $AGORA_ANSWER"'

exec agora dispatch \
  --task-id "ci-${CI_PIPELINE_ID:-local}-${CI_JOB_ID:-$$}" \
  --name release-notes \
  --command "$subagent" \
  --input "{\"commit\": \"${CI_COMMIT_SHA:-HEAD}\"}" \
  --route "${AGORA_ROUTE:-human=15m}" \
  --timeout 30m \
  --wait
