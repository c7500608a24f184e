# addonwall — build, test and verify.
#
# Tools are pinned in hack/tools/go.mod and built from the Go module proxy
# with `go tool`; nothing is downloaded as a binary.

GO          ?= go
# One static binary, and one build cache for the binary and the tests.
export CGO_ENABLED = 0
TOOLS       := $(GO) tool -modfile=hack/tools/go.mod
BIN         ?= bin/addonwall
# How long each fuzz target runs in `make test` (CI keeps it brief).
FUZZTIME    ?= 5s
BENCHTIME   ?= 1x

.PHONY: all build npm test unit fuzz verify generate manifests fmt vet lint run demo bench clean

all: build

build: ## Build the addonwall binary, and the small in-wall entry beside it, into bin/.
	$(GO) build -o $(BIN) .
	$(GO) build -o $(dir $(BIN))addonwall-entry ./cmd/addonwall-entry

generate: ## Regenerate deepcopy code from the api/ markers.
	$(TOOLS) controller-gen object:headerFile=hack/boilerplate.go.txt paths=./api/...

manifests: ## Regenerate CRDs and RBAC from the api/ and controllers/ markers.
	$(TOOLS) controller-gen crd rbac:roleName=addonwall-manager paths=./api/... paths=./controllers/... \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac

fmt:
	gofmt -l -w $$(git ls-files '*.go')

vet:
	$(GO) vet ./...

lint:
	$(TOOLS) staticcheck ./...

npm: test/npm/node_modules/.installed ## Install the real MCP servers from npm that tests run.

test/npm/node_modules/.installed: test/npm/package.json test/npm/package-lock.json
	cd test/npm && npm ci --no-audit --no-fund --ignore-scripts
	touch $@

unit: build npm ## Run every Go test (e2e tests need bubblewrap and docker; see README).
	$(GO) test -count=1 -timeout 30m ./...

fuzz: ## Run each fuzz target briefly.
	hack/fuzz.sh $(FUZZTIME)

test: unit fuzz ## The test command README and CI run.

verify: generate manifests ## Regenerate, format, vet, lint and test; fail on a dirty tree.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt would change:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(MAKE) vet lint
	@git diff --exit-code -- api config || { echo "generated files are out of date: run make generate manifests and commit"; exit 1; }
	$(MAKE) test

run: build ## Run the controller against the Crow home in $$CROW_HOME (default ~/.crow).
	$(BIN) run

DEMO_ARGS ?=
demo: build ## Make a demo Crow home with real add-ons and run the controller on it.
	$(BIN) demo --dir $(CURDIR)/.cache/demo $(DEMO_ARGS)

bench: build ## Benchmarks: walled against unwalled and peers, as ratios.
	hack/bench.sh

clean:
	rm -rf bin
