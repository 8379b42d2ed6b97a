# agora — the commands the README and .ci/run use.
GO        ?= go
GOBIN     := $(shell $(GO) env GOPATH)/bin
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)

VERSITYGW_VERSION   := v1.8.0
STATICCHECK_VERSION := v0.8.2
# nektos/act runs examples/ci/github-actions.yml in cmd/agora's tests; a test
# tool only, so not in go.mod.
ACT_VERSION         := v0.2.89

.PHONY: build tools check test bench bench-throughput bench-cli bench-capacity bench-api bench-million fuzz faults busybox demo image clean

build: ## the static worker and the CLI into bin/
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/agora-worker ./cmd/agora-worker
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/agora ./cmd/agora

tools: ## test tools: versitygw (strict S3 suite), staticcheck, act (the GitHub Actions example), Chromium for the browser tests and Python's jsonschema for the schemas' cross-check (apt-get as root)
	@sh .ci/chromium
	@sh .ci/python-jsonschema
	@test -x $(GOBIN)/versitygw || $(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)
	@test -x $(GOBIN)/staticcheck || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	@test -x $(GOBIN)/act || $(GO) install github.com/nektos/act@$(ACT_VERSION)

check: ## gofmt, go mod tidy (nothing to change), go vet, staticcheck
	@out=$$(gofmt -l . ); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	$(GO) vet ./...
	$(GO) vet -tags openapicheck ./cmd/agora
	$(GOBIN)/staticcheck ./...

test: tools ## every test, including the NATS, S3 and Docker ones
	PATH="$(GOBIN):$$PATH" $(GO) test -tags openapicheck -count=1 -timeout 30m ./...

bench: ## benchmarks, printed as tables
	$(GO) test -run '^$$' -bench . -benchtime 50x ./worker/...
	$(GO) test -run '^$$' -bench Resolve -benchtime 2000x ./orchestrator/registry/

fuzz: ## a short run of every fuzz target
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./worker/sentinel
	$(GO) test -run '^$$' -fuzz FuzzHeadDecode -fuzztime 30s ./orchestrator

faults: ## the fault suite: SIGKILLs of serve, a runner and NATS during a batch; and of a NATS cluster node, an orchestrator and a runner (docs/reliability.md)
	$(GO) test -count=1 -v -run 'TestFaults|TestClusterFaults' -timeout 15m ./test/faults

busybox: ## Debian's static busybox, /bin/sh in the worker image: installed as root with apt-get, else the command to run
	@sh .ci/busybox "make $(if $(filter demo,$(MAKECMDGOALS)),demo,busybox)"

demo: busybox build ## a sub-agent asks, you answer, the same sub-agent resumes and finishes
	bin/agora demo

GO_IMAGE ?= golang:1.26
image: ## the agora serve image (docs/image.md): docker build, the version stamped; GO_IMAGE=agora-test-golang:… where golang:1.26 cannot be pulled
	docker build --build-arg GO_IMAGE=$(GO_IMAGE) --build-arg VERSION=$(VERSION) -t agora:$(VERSION) .

clean:
	rm -rf bin

TASKS ?= 1000
SLOTS ?= 4
bench-throughput: ## agora vs the same containers straight on the engine: TASKS tasks of 2 rounds on SLOTS slots (minutes; docs/benchmarks.md)
	$(GO) test -run '^$$' -bench Throughput -benchtime 1x -timeout 3h ./orchestrator -args -tasks=$(TASKS) -slots=$(SLOTS)

bench-cli: ## the CLI end to end: agora dispatch --wait against agora serve vs docker run --rm of the same image, 1 at a time and 8 on 4 slots (docs/benchmarks.md)
	sh test/benchcli/run.sh $(ROUNDS)

bench-million: ## serve on a data dir of a million stored tasks (written at run time in a temp dir, 3.6 GB, removed after): start without the task index snapshot, after a crash (the periodic snapshot and 1% changed since) and from a stop's snapshot, RSS, first pages p50/p99, /metrics (10-20 minutes; docs/capacity.md)
	$(GO) test -run '^$$' -bench ServeAt1M -benchtime 1x -timeout 90m ./cmd/agora/internal/roles

CAPACITY_TASKS  ?= 150
CAPACITY_SLOTS  ?= 4
CAPACITY_SHAPES ?= 1x1,1x4,1x16,1x4x3,2x4,1x4/r1,1x4x3/r1
CAPACITY_ENGINES ?= process,replay
bench-capacity: ## agora's own ceiling without containers (the measuring engine, process and replay side by side): dispatches/s by 1 orchestrator with 1, 4, 16 runners, a 3-node NATS cluster, 2 orchestrators; 1 router worker (before) beside 8; CPU and time per part (minutes; docs/capacity.md)
	$(GO) test -run '^$$' -bench Capacity -benchtime 1x -timeout 60m ./test/capacity -args -capacity-tasks=$(CAPACITY_TASKS) -capacity-slots=$(CAPACITY_SLOTS) -capacity-shapes=$(CAPACITY_SHAPES) -capacity-engines=$(CAPACITY_ENGINES)

API_RATES   ?= 100,200,500,1000
API_EACH    ?= 5s
API_STREAMS ?= 200
bench-api: ## the HTTP API under vegeta: agora serve in its own process, API_STREAMS event streams open, submit/get/list/answer/mix at API_RATES requests/s for API_EACH each, then the mix stepped up until errors begin; p50/p99 per row (minutes; docs/capacity.md). API_PROFILE=DIR keeps serve's CPU profile per row
	$(GO) test -run '^$$' -bench APILoad -benchtime 1x -timeout 20m ./test/apiload -args -apiload-rates=$(API_RATES) -apiload-each=$(API_EACH) -apiload-streams=$(API_STREAMS) $(if $(API_PROFILE),-apiload-cpuprofile=$(API_PROFILE))
