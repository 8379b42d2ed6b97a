#!/bin/sh
# End to end through the CLI: `agora dispatch --command true --wait` against
# `agora serve` (embedded NATS, orchestrator, a runner with 4 slots) versus
# the same worker image running the same no-op dispatch with
# `docker run --rm` from the Docker CLI. One at a time, then 8 at once (on
# 4 slots; the bare side 4 at a time), alternating which side goes first.
# Prints one line per measurement and the medians. docs/benchmarks.md,
# "End to end through the CLI".
#
# usage: make bench-cli   (= test/benchcli/run.sh [ROUNDS], default 10)
set -eu
rounds=${1:-10}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
tag="agora-worker:bench-cli-$$"
label="agora.bench=cli-$$"
serve_pid=""
cleanup() {
	[ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null || true
	ids=$(docker ps -aq --filter "label=$label")
	[ -n "$ids" ] && docker rm -f $ids >/dev/null || true
	docker rmi "$tag" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

cd "$root"
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/agora-worker" ./cmd/agora-worker
go build -trimpath -ldflags '-s -w' -o "$work/agora" ./cmd/agora
"$work/agora" image build --worker "$work/agora-worker" --tag "$tag" >/dev/null

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$work/agora" serve --data-dir "$work/data" --listen "127.0.0.1:$port" --slots 4 --image "$tag" >"$work/serve.log" 2>&1 &
serve_pid=$!
export AGORA_SERVER="http://127.0.0.1:$port"
i=0
until curl -fsS "$AGORA_SERVER/healthz" >/dev/null 2>&1 || curl -fsS "$AGORA_SERVER/v1/tasks?limit=1" >/dev/null 2>&1; do
	i=$((i+1)); [ $i -gt 300 ] && { cat "$work/serve.log" >&2; echo "serve did not come up" >&2; exit 1; }
	sleep 0.1
done

# The bare run: the worker's no-op dispatch from a spec file, as the runner
# would mount it, with the container's user and --init.
mkdir -p "$work/spec"
# $1 makes the dispatch id (and container name) unique.
bare() {
	id="benchcli-$$-$1"
	printf '{"dispatch_id":"%s","subagent":{"name":"command","runtime":"exec","command":["/bin/sh","-c","true"]}}\n' "$id" >"$work/spec/$id.json"
	docker run --rm --init --user 65532:65532 --label "$label" --name "agora-$id" \
		-v "$work/spec:/agora:ro" -e AGORA_DISPATCH_ID="$id" -e AGORA_SPEC_FILE="/agora/$id.json" \
		-e AGORA_STORAGE_URI=file:///tmp/storage -e AGORA_WORKSPACE=/tmp/ws -e HOME=/tmp "$tag" >/dev/null 2>&1 ||
		echo "bare $id" >>"$work/failed"
}
# A dispatch that does not end finished counts as a failure, not a time.
agora() { "$work/agora" dispatch --command true --wait >/dev/null 2>&1 || echo agora >>"$work/failed"; }
now() { date +%s%N; }
ms() { echo $(( ($2 - $1) / 1000000 )); }

# one: one dispatch; eight: 8 at once (bare: 4 runners of 2 each, the
# slots). $2 makes the bare ids unique.
one() { a=$(now); "$1" "$2"; ms "$a" "$(now)"; }
eight() {
	a=$(now)
	if [ "$1" = agora ]; then
		for _ in 1 2 3 4 5 6 7 8; do agora & done
	else
		for w in 1 2 3 4; do (bare "$2-$w-1" && bare "$2-$w-2") & done
	fi
	wait
	ms "$a" "$(now)"
}

one agora warm >/dev/null; one bare warm >/dev/null # warm-up
: >"$work/results"
r=0
while [ $r -lt "$rounds" ]; do
	r=$((r+1))
	if [ $((r % 2)) -eq 1 ]; then order="agora bare"; else order="bare agora"; fi
	for side in $order; do echo "one $side $(one $side "one-$r")" >>"$work/results"; done
	for side in $order; do echo "eight $side $(eight $side "eight-$r")" >>"$work/results"; done
done
cat "$work/results"
if [ -s "$work/failed" ]; then
	echo "$(wc -l <"$work/failed") runs failed:" >&2
	cat "$work/failed" >&2
	exit 1
fi
median() { grep "^$1 $2 " "$work/results" | awk '{print $3}' | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo "end to end through the CLI, $rounds rounds, medians (ms):"
for k in one eight; do
	a=$(median $k agora); b=$(median $k bare)
	printf '%-6s agora %7s   docker run --rm %7s   ratio %s\n' "$k" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.2f×", a/b}')"
done
