# fibergen — the two commands of the README are `make build` (the main job)
# and `make test` (everything CI checks).

GO       ?= go
FUZZTIME ?= 2m
DSL      := $(sort $(wildcard optimizers/*.dsl))
export PATH := $(PATH):/usr/local/go/bin

.PHONY: build generate test deps fmt-check vet generate-check unit fuzz install gpu-bundle

## build: compile optimizers/fiber.dsl into generated/fiber/ (the main job)
build: deps
	$(GO) run ./cmd/fibergen build optimizers/fiber.dsl

## generate: rebuild every shipped optimizer into generated/
generate: deps
	$(GO) run ./cmd/fibergen build $(DSL)

## install: put the fibergen command in $(go env GOPATH)/bin
install: deps
	$(GO) install ./cmd/fibergen

## gpu-bundle: the GPU checks as static binaries in bin/gpu/ for a GPU host without Go or LLVM;
## scripts/gpu-check.sh OUTDIR runs them there (docs/benchmarks.md)
gpu-bundle: deps
	@mkdir -p bin/gpu
	CGO_ENABLED=0 $(GO) test -c -ldflags='-s -w' -o bin/gpu/tests.test ./tests
	CGO_ENABLED=0 $(GO) test -c -ldflags='-s -w' -o bin/gpu/runtime.test ./runtime
	CGO_ENABLED=0 $(GO) test -c -ldflags='-s -w' -o bin/gpu/cudadrv.test ./runtime/cudadrv
	CGO_ENABLED=0 $(GO) build -ldflags='-s -w' -o bin/gpu/fibergen ./cmd/fibergen

## test: formatting, vet, generated/ up to date, unit and system tests (the fuzz
## corpora run as ordinary tests); deterministic, as CI must be
test: deps fmt-check vet generate-check unit

## deps: Go modules, and LLVM 14 (llc, opt) and a linker for the kernels —
## installed with apt-get when missing and run as root on Debian
deps:
	@command -v $(GO) >/dev/null || { echo "fibergen needs Go 1.26 or newer (https://go.dev/dl); 'go' is not on PATH" >&2; exit 1; }
	@$(GO) mod download
	@if ! command -v llc-14 >/dev/null || ! command -v opt-14 >/dev/null || ! command -v ld >/dev/null; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing LLVM 14 and binutils (Debian packages llvm-14, binutils)"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq llvm-14 binutils >/dev/null; \
		else \
			echo "fibergen needs LLVM 14 and a linker: apt-get install -y llvm-14 binutils (as root)" >&2; exit 1; \
		fi; \
	fi

fmt-check:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:" >&2; echo "$$out" >&2; exit 1; fi

vet:
	$(GO) vet ./...

## generate-check: regenerate into a temp dir and fail on any difference with generated/
generate-check:
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	$(GO) run ./cmd/fibergen build -o $$tmp $(DSL) >/dev/null && \
	diff -r -x '*.so' generated $$tmp || { echo "generated/ is stale: run 'make generate' and commit the result" >&2; exit 1; }

unit:
	$(GO) test -count=1 ./...

## fuzz: open-ended random fuzzing of everything that parses, FUZZTIME per target
## (not part of make test: run it before a change lands, and keep every crasher in
## the target's testdata/fuzz corpus)
fuzz:
	$(GO) test ./dsl -run '^$$' -fuzz '^FuzzCheck$$' -fuzztime $(FUZZTIME)
	$(GO) test ./lower -run '^$$' -fuzz '^FuzzCompile$$' -fuzztime $(FUZZTIME)
	$(GO) test ./pipeline -run '^$$' -fuzz '^FuzzCompile$$' -fuzztime $(FUZZTIME)
	$(GO) test ./runtime/npy -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(FUZZTIME)
