# gccl — build, test and run. `make run` and `make test` install what they
# need (Open MPI and pkg-config, through apt-get, when missing).
#
#   make run          the one-device-per-process example under mpirun -np $(NP)
#                     (GPUs when present, else the host backend)
#   make test         go vet, go test -race, then the mpirun tests (1-8 processes)
#   make test-mpich   the same mpiboot/integration tests built against MPICH
#   make lint         gofmt and go vet
#   make gpu-bundle   binaries + run script for the GPU machine, in ./bundle
#   make kernels      rebuild the CUDA fatbin (needs nvcc)
#   make perf         the benchmark under mpirun -np $(NP)
#   make soak         the MPI suite repeatedly for $(SOAK_TIME) seconds
#   make fuzz         every fuzz target for $(FUZZTIME)

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
export GOFLAGS ?= -buildvcs=false

NP ?= $(shell n=$$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true); [ "$${n:-0}" -ge 1 ] && echo $$n || echo 4)
GO_TEST_TIMEOUT ?= 20m
SOAK_TIME ?= 600
FUZZTIME ?= 15s
PERF_ARGS ?=

.PHONY: run test test-mpich deps deps-mpich lint vet unit mpi-tests gpu-bundle kernels perf soak fuzz clean

deps:
	@scripts/deps.sh openmpi
	@command -v go >/dev/null || { echo "make: Go 1.26 is required (https://go.dev/dl)"; exit 1; }

deps-mpich:
	@scripts/deps.sh mpich

run: deps
	go build -o out/onedevice ./examples/mpi/onedevice
	scripts/mpirun.sh $(NP) out/onedevice

test: deps vet unit mpi-tests

vet:
	go vet ./...

unit:
	go test -race -count=1 -timeout $(GO_TEST_TIMEOUT) ./...

mpi-tests:
	MPI=openmpi test/run.sh

# Only mpiboot links MPI: vet and test it and its users with the mpich tag.
MPI_PKGS := ./mpiboot/... ./test/mpi/... ./examples/...

test-mpich: deps-mpich
	go vet -tags mpich $(MPI_PKGS)
	go test -race -count=1 -tags mpich $(MPI_PKGS)
	MPI=mpich test/run.sh

lint:
	@bad=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$bad" ]; then echo "gofmt needed:"; echo "$$bad"; exit 1; fi
	go vet ./...
	go vet -tags mpich $(MPI_PKGS)

gpu-bundle: deps
	scripts/gpu-bundle.sh bundle

kernels:
	@if command -v nvcc >/dev/null; then kernels/build.sh; \
	else echo "make kernels: nvcc not found; run it on the GPU machine (CUDA 13)"; exit 1; fi

perf: deps
	@[ -d cmd/gccl-perf ] || { echo "make perf: cmd/gccl-perf is not in this tree yet"; exit 1; }
	go build -o out/gccl-perf ./cmd/gccl-perf
	scripts/mpirun.sh $(NP) out/gccl-perf $(PERF_ARGS)

soak: deps
	SOAK_TIME=$(SOAK_TIME) scripts/soak.sh

fuzz:
	FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

clean:
	rm -rf out bundle
