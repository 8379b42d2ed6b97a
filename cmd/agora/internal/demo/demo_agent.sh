#!/bin/sh
# An example sub-agent: it inspects the workspace, asks which way to go, and
# on the next round picks up the answer and its own notes and finishes.
set -e
if [ -z "$AGORA_ANSWER" ]; then
  echo "round $AGORA_ROUND: looking at the config files…" >&2
  printf 'port: 8080\n' > config.yaml
  printf '{"port": 8080}\n' > config.json
  echo '{"found":["config.yaml","config.json"],"port":8080}' > .agora/notes.json
  agora-worker ask "Two config files define the port. Which one should stay?" \
    --option config.yaml --option config.json \
    --context "Both set port 8080; keeping two invites drift." \
    --default config.yaml --state .agora/notes.json
  exit 0
fi
echo "round $AGORA_ROUND: the answer is $AGORA_ANSWER; my notes from before:" >&2
cat "$AGORA_RESUME_FILE" >&2
for f in config.yaml config.json; do
  [ "$f" = "$AGORA_ANSWER" ] || rm -f "$f"
done
echo "kept $AGORA_ANSWER" >&2
