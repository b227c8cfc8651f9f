# fibergen — the two commands of the README are `make build` (the main job)
# and `make test` (everything CI checks).

GO       ?= go
FUZZTIME ?= 2m
# A limit for each go test run far above what it takes on a quiet machine
# (the slowest package, a few minutes): Go's default of 10 minutes per
# package was passed on a busy 2-core machine, where a failure by timeout
# says nothing about the code.
TESTTIMEOUT ?= 30m
DSL      := $(sort $(wildcard optimizers/*.dsl))
# Debian's Python, whose python3-torch the binding's tests use.
PYTHON   ?= $(shell command -v /usr/bin/python3 || command -v python3)
PYTHON_DEBS := python3-torch python3-numpy python3-pytest python3-tqdm python3-matplotlib dataset-fashion-mnist
export PATH := $(PATH):/usr/local/go/bin

.PHONY: build generate test deps ptxas fmt-check vet generate-check unit race fuzz install gpu-bundle python-lib python-deps python-test pytest reproduce

## build: compile optimizers/fiber.dsl into generated/fiber/ (the main job)
build: deps
	$(GO) run ./cmd/fibergen build optimizers/fiber.dsl

## generate: rebuild every shipped optimizer into generated/
generate: deps
	$(GO) run ./cmd/fibergen build $(DSL)

## install: put the fibergen command in $(go env GOPATH)/bin
install: deps
	$(GO) install ./cmd/fibergen

## gpu-bundle: the GPU checks as static binaries in bin/gpu/ for a GPU host without Go or LLVM,
## with libfibergen.so and the built optimizers for the PyTorch binding's CUDA tests (and
## runtime/testdata's, for the runtime's);
## scripts/gpu-check.sh OUTDIR runs them there (docs/benchmarks.md)
gpu-bundle: deps
	@mkdir -p bin/gpu
	CGO_ENABLED=0 $(GO) test -c -ldflags='-s -w' -o bin/gpu/tests.test ./tests
	CGO_ENABLED=0 $(GO) test -c -ldflags='-s -w' -o bin/gpu/runtime.test ./runtime
	CGO_ENABLED=0 $(GO) test -c -ldflags='-s -w' -o bin/gpu/cudadrv.test ./runtime/cudadrv
	CGO_ENABLED=0 $(GO) build -ldflags='-s -w' -o bin/gpu/fibergen ./cmd/fibergen
	CGO_ENABLED=1 $(GO) build -buildmode=c-shared -ldflags='-s -w' -o bin/gpu/libfibergen.so ./capi
	rm -rf bin/gpu/generated bin/gpu/generated-bf16 && bin/gpu/fibergen build -o bin/gpu/generated $(DSL) runtime/testdata/*.dsl >/dev/null
	bin/gpu/fibergen build --params bf16 -o bin/gpu/generated-bf16 optimizers/dp_adamw.dsl optimizers/dp_adamw_bf16.dsl optimizers/fiber_bf16.dsl >/dev/null
	rm -f bin/gpu/generated*/*/*.go bin/gpu/generated*/*/*.ll  # the GPU host needs no Go and no LLVM (go vet ./... would take the .go for packages)
	tar czf bin/gpu.tgz -C bin gpu  # the bundle as one file, for a tool that carries few (docs/benchmarks.md)

## test: formatting, vet, generated/ up to date, unit and system tests (the fuzz
## corpora run as ordinary tests); deterministic, as CI must be. unit, race and
## the binding's tests run two at a time, each target's output printed whole when
## it ends: alone, each leaves a core idle for much of its time (docs/decisions.md, 73)
test: deps ptxas fmt-check vet generate-check python-lib python-deps
	@$(MAKE) --no-print-directory -j2 --output-sync=target unit race pytest

## deps: Go modules, and LLVM 14 (llc, opt) and a linker for the kernels —
## installed with apt-get when missing and run as root on Debian
deps:
	@command -v $(GO) >/dev/null || { echo "fibergen needs Go 1.26 or newer (https://go.dev/dl); 'go' is not on PATH" >&2; exit 1; }
	@$(GO) mod download
	@if ! command -v llc-14 >/dev/null || ! command -v opt-14 >/dev/null || ! command -v ld >/dev/null || ! command -v gcc >/dev/null; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing LLVM 14, binutils and gcc (Debian packages llvm-14, binutils, gcc)"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq llvm-14 binutils gcc libc6-dev >/dev/null; \
		else \
			echo "fibergen needs LLVM 14, a linker and a C compiler for cgo: apt-get install -y llvm-14 binutils gcc (as root)" >&2; exit 1; \
		fi; \
	fi

## ptxas: NVIDIA's PTX assembler for TestPTXAssembles, extracted from Debian's non-free
## nvidia-cuda-toolkit (scripts/install-ptxas.sh, as root); without it those tests skip
ptxas:
	@if ! command -v ptxas >/dev/null && [ ! -x /usr/local/bin/ptxas ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			scripts/install-ptxas.sh || echo "warning: ptxas could not be installed: TestPTXAssembles will skip" >&2; \
		else \
			echo "no ptxas: TestPTXAssembles will skip (scripts/install-ptxas.sh installs it, as root on Debian 12)" >&2; \
		fi; \
	fi

fmt-check:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*' -not -path './_build/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:" >&2; echo "$$out" >&2; exit 1; fi

vet:
	$(GO) vet ./...

## generate-check: regenerate into _build/generated and fail on any difference with generated/
## (the host kernels built there, *.so, serve python-test); the same for the binding's _abi.py
## (capi/internal/genpy, go generate ./capi)
generate-check:
	@rm -rf _build/generated && mkdir -p _build && $(GO) build -o _build/fibergen ./cmd/fibergen && \
	_build/fibergen build -o _build/generated $(DSL) >/dev/null && \
	diff -r -x '*.so' generated _build/generated || { echo "generated/ is stale: run 'make generate' and commit the result" >&2; exit 1; }
	@$(GO) run ./capi/internal/genpy -o _build/_abi.py && diff python/fibergen/_abi.py _build/_abi.py || \
	{ echo "python/fibergen/_abi.py is stale: run 'go generate ./capi' and commit the result" >&2; exit 1; }

## reproduce: the Fashion-MNIST study of docs/reproduction.md (about 3.5 hours on 2 cores;
## resumes where a killed one stopped), then its figures and tables
reproduce: generate python-lib python-deps
	$(PYTHON) examples/fashion_mnist/study.py --out docs/reproduction --generated generated
	$(PYTHON) examples/fashion_mnist/plot.py --out docs/reproduction

## python-lib: libfibergen.so, the C ABI of package runtime (capi/) that the Python binding loads
python-lib: deps
	CGO_ENABLED=1 $(GO) build -buildmode=c-shared -o python/fibergen/libfibergen.so ./capi

## python-deps: Debian's torch, numpy, pytest, tqdm, matplotlib and Fashion-MNIST for the
## binding's tests and examples (apt-get as root)
python-deps:
	@if ! $(PYTHON) -c 'import torch, numpy, pytest, functorch, tqdm, matplotlib' 2>/dev/null || [ ! -d /usr/share/datasets/fashion-mnist ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing $(PYTHON_DEBS) (Debian)"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(PYTHON_DEBS) >/dev/null; \
		else \
			echo "the Python tests need Debian's $(PYTHON_DEBS) (apt-get install, as root)" >&2; exit 1; \
		fi; \
	fi

## python-test: the PyTorch binding's tests (python/tests) against _build/generated
python-test: python-lib python-deps generate-check
	$(PYTEST)

# pytest: python-test without its prerequisites, which test has made first
pytest:
	$(PYTEST)

PYTEST = FIBERGEN_BIN=$(CURDIR)/_build/fibergen FIBERGEN_GENERATED=$(CURDIR)/_build/generated \
	$(PYTHON) -m pytest -q -p no:cacheprovider python/tests

## unit: every Go test; then the CUDA backend's tests again on the PTX simulator
## (internal/cudasim), which stands in for the GPU the first run skips without
unit:
	$(GO) test -count=1 -timeout $(TESTTIMEOUT) ./...
	FIBERGEN_CUDA_SIM=1 FIBERGEN_REQUIRE_CUDA=1 $(GO) test -count=1 -timeout $(TESTTIMEOUT) ./runtime -run 'CUDA|StepDevice'

## race: the runtime and the C ABI under the race detector (an Optimizer is
## shared by goroutines; the C ABI by threads)
race:
	$(GO) test -race -count=1 -timeout $(TESTTIMEOUT) ./runtime ./capi

## fuzz: open-ended random fuzzing of everything that parses, FUZZTIME per target
## (not part of make test: run it before a change lands, and keep every crasher in
## the target's testdata/fuzz corpus)
fuzz:
	$(GO) test ./dsl -run '^$$' -fuzz '^FuzzCheck$$' -fuzztime $(FUZZTIME) -timeout $(TESTTIMEOUT)
	$(GO) test ./lower -run '^$$' -fuzz '^FuzzCompile$$' -fuzztime $(FUZZTIME) -timeout $(TESTTIMEOUT)
	$(GO) test ./pipeline -run '^$$' -fuzz '^FuzzCompile$$' -fuzztime $(FUZZTIME) -timeout $(TESTTIMEOUT)
	$(GO) test ./runtime/npy -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(FUZZTIME) -timeout $(TESTTIMEOUT)
	$(GO) test ./runtime -run '^$$' -fuzz '^FuzzLoadFrom$$' -fuzztime $(FUZZTIME) -timeout $(TESTTIMEOUT)
	$(GO) test ./runtime -run '^$$' -fuzz '^FuzzShard$$' -fuzztime $(FUZZTIME) -timeout $(TESTTIMEOUT)
	$(GO) test ./capi -run '^$$' -fuzz '^FuzzAnswerQuery$$' -fuzztime $(FUZZTIME) -timeout $(TESTTIMEOUT)
	$(GO) test ./internal/ptxsim -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -timeout $(TESTTIMEOUT)
	$(GO) test ./internal/objcache -run '^$$' -fuzz '^FuzzVerify$$' -fuzztime $(FUZZTIME) -timeout $(TESTTIMEOUT)
	$(GO) test ./ir -run '^$$' -fuzz '^FuzzParseStorage$$' -fuzztime $(FUZZTIME) -timeout $(TESTTIMEOUT)
