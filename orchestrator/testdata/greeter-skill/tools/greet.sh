#!/bin/sh
# A capability's script: asks once, then greets with the env bundle's value.
set -e
if [ -z "$AGORA_ANSWER" ]; then
  echo "round 1 greeting: $GREETING"
  agora-worker ask "Whom should I greet?" --option world --option team
  exit 0
fi
echo "round 2 greeting: $GREETING, $AGORA_ANSWER"
