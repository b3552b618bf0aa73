# tracer: make help lists the targets.
SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
BIN := bin/tracer
# Debian packages the tests and the demo use (auditd and bpftrace for the
# bench comparison, prometheus for promtool and the end-to-end scrape,
# chromium for the HTML report check, clang/llvm/libbpf-dev to check that
# the committed BPF objects are current, strace and time as independent
# witnesses in the trace tests).
APT_PACKAGES := auditd bpftrace prometheus chromium clang llvm libbpf-dev gcc libc6-dev strace time

.PHONY: help deps build demo test vet fmt-check generate check-generated bench clean

help: ## show this help
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

deps: ## install the Debian packages tests and demo need (needs root and apt)
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi

build: ## build bin/tracer (no clang needed: BPF objects are committed)
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/tracer

demo: deps build ## the main job: a short side-by-side comparison of the backends on built-in workloads
	./$(BIN) bench --quick --out bench-quick.json
	./$(BIN) report --format md bench-quick.json

test: deps vet fmt-check check-generated ## all tests, as root: unit, privileged integration, deploy manifests, benchmark smoke
	$(GO) test -count=1 -timeout 40m ./...
	cd deploy && $(GO) test -count=1 ./...
	$(GO) test -count=1 -run '^$$' -bench . -benchtime=1x ./...

vet: ## go vet
	$(GO) vet ./...

fmt-check: ## fail when gofmt would change a file
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

generate: ## rebuild the BPF objects and their Go bindings with clang (bpf2go)
	$(GO) generate ./bpf/...

check-generated: ## fail when the committed BPF objects are stale (skipped without clang)
	@if ! command -v clang >/dev/null; then echo "clang not installed: skipping the generated-files check"; exit 0; fi; \
	tmp=$$(mktemp -d); cp -r bpf $$tmp/; \
	$(GO) generate ./bpf/... && \
	if ! git diff --quiet -- bpf; then \
		echo "generated files are not up to date: run make generate and commit bpf/"; git diff --stat -- bpf; \
		rm -rf bpf && cp -r $$tmp/bpf . ; rm -rf $$tmp; exit 1; \
	fi; rm -rf $$tmp

bench: build ## the full overhead comparison (see docs/overhead.md), results in bench.json
	./$(BIN) bench --out bench.json
	./$(BIN) report --format md bench.json

clean: ## remove build outputs
	rm -rf bin bench-quick.json bench.json
