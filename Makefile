# tracer: make help lists the targets.
SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
BIN := bin/tracer
# Debian packages. The demo needs only the peers it compares against
# (auditd, bpftrace, laurel, libbpf-tools); the tests also need prometheus (promtool and the
# end-to-end scrape), chromium (the HTML report check), clang/llvm/
# libbpf-dev (that the committed BPF objects are current), gcc/libc6-dev
# (the C workload), strace and time (independent witnesses in the trace
# tests). Installing auditd starts it: the demo measures beside it.
# APP_PACKAGES are bench's application workloads (redis, nginx, sysbench,
# stress-ng); apt starts redis-server's and nginx's services on install, and
# apt-install stops and disables them again: bench runs its own servers.
# Installing laurel activates its plugin in /etc/audit/plugins.d (the node's
# auditd would start it): apt-install deactivates it again (active = no) and
# has a running auditd reload its plugins; bench runs laurel from a plugin
# directory of its own.
DEMO_PACKAGES := auditd bpftrace laurel libbpf-tools
APP_PACKAGES := redis-server redis-tools nginx-light apache2-utils sysbench stress-ng
# PACKAGE_TEST_PACKAGES check make package's output: rpm (rpm -qp,
# rpm2cpio), rpmlint, logrotate (the snippet's syntax) and systemd
# (systemd-analyze verify; installing it starts nothing where systemd is
# not PID 1).
PACKAGE_TEST_PACKAGES := rpm rpmlint logrotate systemd
# The log daemons watch --output journal and syslog are tested against
# (each test runs its own: systemd-journald in private namespaces, rsyslogd
# on its own socket and ports).
LOG_TEST_PACKAGES := rsyslog systemd
# make test-kernels boots Debian's kernels under qemu (KERNEL_PACKAGES)
# with a busybox initramfs; the kernel images come from apt too, unpacked
# under build/kernels (.ci/kernels), never installed.
KERNEL_TEST_PACKAGES := qemu-system-x86 busybox-static gcc libc6-dev
KERNEL_PACKAGES := linux-image-amd64 linux-image-6.12-amd64
TEST_PACKAGES := $(KERNEL_TEST_PACKAGES) $(DEMO_PACKAGES) prometheus chromium clang llvm libbpf-dev gcc libc6-dev strace time $(APP_PACKAGES) $(PACKAGE_TEST_PACKAGES) $(LOG_TEST_PACKAGES)

.PHONY: help deps deps-demo deps-kernels test-kernels build demo test check test-measure test-beside-auditd vet cross lint fmt-check generate check-generated bench bench-apps clean man fuzz fuzz-smoke fuzz-list-check package

help: ## show this help
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

deps: ## install the Debian packages the tests need (needs root and apt)
	@$(MAKE) --no-print-directory apt-install PACKAGES="$(TEST_PACKAGES)"

deps-demo: ## install the Debian packages the demo needs: auditd, bpftrace, laurel, libbpf-tools (needs root and apt)
	@$(MAKE) --no-print-directory apt-install PACKAGES="$(DEMO_PACKAGES)"

.PHONY: apt-install
apt-install:
	@missing=""; for p in $(PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing || exit 1; \
		for svc in redis-server:redis-server nginx-light:nginx; do \
			case " $$missing " in *" $${svc%%:*} "*) ;; *) continue;; esac; name=$${svc#*:}; \
			if [ -d /run/systemd/system ]; then systemctl disable --now $$name; \
			else \
				command -v update-rc.d >/dev/null && update-rc.d $$name disable >/dev/null 2>&1; \
				for pf in /run/redis/redis-server.pid /run/nginx.pid; do \
					case $$pf in *$$name*) [ -s $$pf ] && kill $$(cat $$pf) 2>/dev/null && echo "stopped the $$name apt started";; esac; \
				done; \
			fi; \
		done; \
		case " $$missing " in *" auditd "*) mkdir -p build && touch build/auditd-installed-by-make;; esac; \
		case " $$missing " in *" laurel "*) \
			if [ -f /etc/audit/plugins.d/laurel.conf ] && grep -q '^active *= *yes' /etc/audit/plugins.d/laurel.conf; then \
				sed -i 's/^active *= *yes/active = no/' /etc/audit/plugins.d/laurel.conf && echo "deactivated the laurel plugin apt activated"; \
				[ -s /run/auditd.pid ] && kill -HUP $$(cat /run/auditd.pid) 2>/dev/null; \
			fi;; \
		esac; true; \
	fi

build: ## build bin/tracer (no clang needed: BPF objects are committed)
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/tracer

man: build ## generate the man pages from the commands' help: build/man/tracer.8 and tracer-COMMAND.8
	rm -rf build/man
	./$(BIN) man build/man

# make package's work directory and output; the package test sets both.
PKG_BUILD ?= build/package
DIST ?= dist

# The binary is static (CGO_ENABLED=0): one file for RHEL 7's glibc and
# RHEL 9's. The package's version is the one the binary reports, made rpm-
# and deb-safe (deploy/package/main.go). Needs an amd64 host: the binary
# writes its own man pages.
package: ## dist/tracer-VERSION.x86_64.rpm and dist/tracer_VERSION_amd64.deb (nfpm): binary, tracer.service, config, logrotate, docs, man pages, bash/zsh/fish completion
	rm -rf $(PKG_BUILD) && mkdir -p $(PKG_BUILD)
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(PKG_BUILD)/tracer ./cmd/tracer
	$(PKG_BUILD)/tracer man $(PKG_BUILD)/man && gzip -9n $(PKG_BUILD)/man/*.8
	mkdir -p $(PKG_BUILD)/doc/docs && cp README.md LICENSE $(PKG_BUILD)/doc/ && cp docs/*.md $(PKG_BUILD)/doc/docs/
	$(GO) -C deploy/package run . -binary $(abspath $(PKG_BUILD))/tracer -man $(abspath $(PKG_BUILD))/man -doc $(abspath $(PKG_BUILD))/doc -out $(abspath $(DIST))

# The demo is the Red Hat measurement of what audit rules cost (a shell
# script's elapsed, user, sys and CPU with and without rules, on SSD and on
# a spinning disk) and its question, a cheaper way to trace a killer: the
# CIS shell loop and a kill storm (10,000 kill(SIGUSR1)), then exec and
# signal events paced at 300 a second for their CPU per event. Every way of
# watching runs on SSD and on a simulated HDD, auditd with the node's flush
# mode (Debian's and RHEL's auditd.conf: INCREMENTAL_ASYNC, which never
# waits for the disk) and with INCREMENTAL (a synchronous flush every freq
# records, where waiting on a spinning disk shows), but auditd
# with flush=SYNC, which writes a few records a second on the simulated HDD
# (a single cis-shell round took over 5 minutes): SSD only. Rounds go on within DEMO_BUDGET while a mode's
# 95% interval overlaps its neighbour's. docs/overhead.md#the-demo says the
# same; the doc test checks that both name this command.
DEMO_WORKLOADS := cis-shell,signal-storm:10000,exec-rate:300,signal-rate:300
DEMO_MODES := audit,ebpf,audit-floor,ebpf-floor,auditd,auditd-incremental,auditd-sync@ssd,laurel,bpftrace,libbpf-tools
DEMO_BUDGET := 6m
DEMO_FLAGS := --workload $(DEMO_WORKLOADS) --rate 300 --modes $(DEMO_MODES) --storage ssd,hdd --target 300ms --budget $(DEMO_BUDGET)
DEMO_OUT := bench-demo.json

demo: deps-demo build ## the main job: auditd, laurel and this tool's audit and eBPF backends (with bpftrace and the libbpf-tools) on the CIS shell loop and a kill storm, SSD and simulated HDD, then paced events; the report's verdict (about 10 minutes)
	@start=$$(date +%s); restart=""; \
	if [ -e build/auditd-installed-by-make ]; then restart=--restart-auditd; fi; \
	./$(BIN) bench $(DEMO_FLAGS) $$restart -o $(DEMO_OUT) && \
	./$(BIN) report --format md $(DEMO_OUT); rc=$$?; \
	echo "make demo: $$(( ($$(date +%s) - start) / 60 ))m$$(( ($$(date +%s) - start) % 60 ))s; the result file is $(DEMO_OUT) (tracer report --format html -o demo.html $(DEMO_OUT) for the charts)"; exit $$rc

# make check is the edit loop: what needs neither root nor the packages make
# deps installs, in a few minutes (README.md: Development).
check: ## vet, lint, gofmt and the unit tests (-short: no root, no race detector); a few minutes
	@start=$$(date +%s); rc=0; rm -f build/.test-start; \
	for s in vet lint fmt-check; do .ci/stage $$s $(MAKE) --no-print-directory $$s || rc=1; done; \
	.ci/stage unit $(GO) test -short -timeout 5m ./... || rc=1; \
	echo "== make check: $$(( $$(date +%s) - start ))s"; exit $$rc

# make deps installed every tool the tests use: a missing one fails its
# test (tracertest.MissingTool) instead of skipping it.
test: export TRACER_DEPS_INSTALLED := 1
test: ## all tests, as root: unit (with -race), privileged integration, deploy manifests, benchmark smoke
	@# The unit tests run with the race detector; -short skips the root
	@# tests (tracertest.NeedRoot). Those run in the second pass, without
	@# -race: they load audit rules and BPF programs and drive real storms
	@# of millions of events and bench rounds through the tracer binary,
	@# which -race would slow several times over for little gain (the
	@# binary they run is built without it anyway).
	@# Each stage says how long it took (.ci/stage), and the whole too.
	@mkdir -p build && date +%s > build/.test-start
	.ci/stage deps $(MAKE) --no-print-directory deps
	.ci/stage vet $(MAKE) --no-print-directory vet
	.ci/stage lint $(MAKE) --no-print-directory lint
	.ci/stage cross $(MAKE) --no-print-directory cross
	.ci/stage fmt-check $(MAKE) --no-print-directory fmt-check
	.ci/stage check-generated $(MAKE) --no-print-directory check-generated
	.ci/stage unit-race $(GO) test -race -short -count=1 -timeout 10m ./...
	.ci/stage fuzz-smoke $(MAKE) --no-print-directory fuzz-smoke
	.ci/stage root $(GO) test -count=1 -timeout 25m -skip '$(MEASURE_TESTS)' ./...
	.ci/stage measure $(MAKE) --no-print-directory test-measure
	.ci/stage beside-auditd $(MAKE) --no-print-directory test-beside-auditd
	.ci/stage deploy sh -c 'cd deploy && $(GO) test -count=1 -timeout 5m ./...'
	.ci/stage deploy-package sh -c 'cd deploy/package && $(GO) vet ./... && $(GO) test -count=1 -timeout 10m ./...'
	@# watch --output otlp:// against the OpenTelemetry Collector's own OTLP
	@# receiver: a module of its own, as the collector's packages are heavy.
	.ci/stage otlptest sh -c 'cd deploy/otlptest && $(GO) vet ./... && $(GO) test -count=1 -timeout 5m ./...'
	.ci/stage bench-smoke $(GO) test -count=1 -run '^$$' -bench . -benchtime=1x -timeout 10m ./...
	.ci/stage test-kernels $(MAKE) --no-print-directory test-kernels
	@echo "== make test: $$(( $$(date +%s) - $$(cat build/.test-start) ))s in all"

# The test runs make test-kernels makes in each guest kernel, in order, one
# a line: PACKAGE -test.run-PATTERN [VAR=VALUE ...]
# (tracer/tracertest/kernels). The guest sets TRACER_TEST_GUEST=1:
# tracertest.RequireThrowawayKernel lets a test change what only a reboot
# undoes, so the audit lock (auditctl -e 2) runs last, in a run of its own.
# Chosen for what differs between kernels, and kept short (under TCG each
# backend start costs 5-30 s of verifier time): the eBPF backend's exact
# counts on every probe set (sched, syscalls, raw tracepoints), counting
# mode, who killed what, and every forced transport and attach kind
# (TestFallbacks: workload, deaths, a 200,000-kill storm each); the audit
# backend's exact counts, its refused rule, and following locked rules.
define KERNEL_TESTS
./tracer/bpfbackend ^(TestWorkloadEvents|TestCountOnly|TestWhoKilledIt|TestFallbacks)$$
./tracer/audit ^(TestKnownWorkloadExactCounts|TestRuleRefusedLeavesNothing)$$
./tracer/audit ^TestLockedRulesFollowKeys$$
endef
export KERNEL_TESTS
KERNELS_DIR := build/kernels

deps-kernels: ## install qemu and busybox-static, and unpack the kernels make test-kernels boots into build/kernels (from apt)
	@$(MAKE) --no-print-directory apt-install PACKAGES="$(KERNEL_TEST_PACKAGES)"
	@mkdir -p $(KERNELS_DIR) && .ci/kernels $(KERNELS_DIR) $(KERNEL_PACKAGES) >$(KERNELS_DIR)/list

test-kernels: deps-kernels ## boot Debian's 6.1 and 6.12 kernels under qemu and run KERNEL_TESTS there as root (TCG where KVM cannot: several minutes; logs in build/kernels)
	@start=$$(date +%s); \
	$(GO) run ./tracer/tracertest/kernels -out $(KERNELS_DIR) $$(sed 's/^/-kernel /' $(KERNELS_DIR)/list); rc=$$?; \
	echo "make test-kernels: $$(( $$(date +%s) - start ))s"; exit $$rc

# The tests that measure CPU or delay against a bound: they run alone (one
# package at a time, after the root pass), since on 2 vCPUs another
# package's storm beside them moves their figures (CI's root pass once
# saw ebpf-exec at 1.04x execsnoop's CPU per event, 0.68x alone).
MEASURE_TESTS := ^(TestEBPFCPUAgainstPeers|TestWatchRateLimitCPU|TestIdleEBPFWatcherSleeps|TestEBPFMaxDelaySteadyExecs|TestEBPFMaxDelayStormDelivered)$$
MEASURE_PKGS := ./bench/ ./cmd/tracer/

test-measure: ## the tests that hold CPU and delay to a bound, alone on the node (make test runs them after the root pass)
	$(GO) test -count=1 -p 1 -timeout 15m -run '$(MEASURE_TESTS)' $(MEASURE_PKGS)

BESIDE_AUDITD_SKIP := ^(TestColdGoBuildRuntimeNoise|TestPeerModes|TestAppWorkloads|TestStressForkEvents|TestWatchMetricsPortSquatted|TestEBPFCPUAgainstPeers|TestWatchRateLimitCPU|TestIdleEBPFWatcherSleeps|TestEBPFMaxDelaySteadyExecs|TestEBPFMaxDelayStormDelivered)$$

# The packages whose root tests touch audit state (tracertest.LockAudit),
# and those that read it or the state directory (auditstate) or write
# beside a running auditd's log (sink).
AUDIT_TEST_PKGS := ./tracer/ ./tracer/audit/ ./tracer/auditstate/ ./tracer/sink/ ./tracer/metrics/ ./tracer/node/ ./cmd/tracer/ ./bench/

test-beside-auditd: ## the root tests that touch audit state again, with the node's auditd running as the distribution starts it (where it runs already, the pass before was that state)
	@# The runs that watch no audit state of their own (eBPF's delay, peers,
	@# application workloads and metrics port; the measurements, alone in
	@# test-measure) and the cold build's noise counts ran in the pass before.
	.ci/beside-auditd $(GO) test -count=1 -timeout 20m -skip '$(BESIDE_AUDITD_SKIP)' $(AUDIT_TEST_PKGS)

# Every fuzz target, as package:function: go test -fuzz takes one target
# per package run. fuzz-list-check fails when a func Fuzz of the tree is
# missing here. The parsers of what the node's other users control come
# first (docs: "Safe against the node's other users").
FUZZ_TARGETS := \
	./tracer:FuzzParseProcStat \
	./tracer:FuzzParseProcCgroup \
	./tracer/sink:FuzzJSONSinkMatchesAppendJSON \
	./tracer/auparse:FuzzLogRecord \
	./tracer/auparse:FuzzParseRecord \
	./tracer/audit:FuzzReassemble \
	./tracer/bpfbackend:FuzzDecode \
	./tracer/bpfbackend:FuzzDecodeAcrossRecords \
	./bench:FuzzReadAuditLog \
	./bench/report:FuzzReadResult \
	./auditrules/cost:FuzzParseRules \
	./tracer/sink:FuzzEscape \
	./tracer/sink:FuzzAppendJSON \
	./tracer/sink:FuzzAppendIntMatchesStrconv \
	./tracer/sink:FuzzAppendStringMatchesByteAtATime
FUZZTIME ?= 30s
# Minimizing each new input the fuzzer finds interesting takes up to 60s
# by default, which would eat a short run; a crasher is kept either way.
FUZZMINIMIZETIME ?= 5s
# One worker: the node's CPUs are shared.
FUZZPARALLEL ?= 1

fuzz: fuzz-list-check ## run every fuzz target for FUZZTIME (30s) each, one after the other; crashers land in the package's testdata/fuzz
	@set -e; for pt in $(FUZZ_TARGETS); do \
		pkg=$${pt%%:*}; fn=$${pt#*:}; echo "fuzz $$pkg $$fn for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) -parallel $(FUZZPARALLEL) $$pkg; \
	done

# The smoke run counts inputs rather than time: a -fuzztime deadline that
# ends while a worker runs a slow input fails the run with "context
# deadline exceeded" though nothing was found.
fuzz-smoke: ## every fuzz target for 2,000 inputs (a few seconds; make test runs it)
	@$(MAKE) --no-print-directory fuzz FUZZTIME=2000x

fuzz-list-check:
	@want=$$(grep -rHo --include='*_test.go' --exclude-dir=.git --exclude-dir=deploy '^func Fuzz[A-Za-z0-9_]*' . | \
		sed -E 's|^\./(.*)/[^/]*:func (.*)|./\1:\2|' | sort); \
	have=$$(printf '%s\n' $(FUZZ_TARGETS) | sort); \
	if [ "$$want" != "$$have" ]; then \
		echo "FUZZ_TARGETS in the Makefile and the fuzz targets in the tree differ (< Makefile, > tree):"; \
		diff <(echo "$$have") <(echo "$$want"); exit 1; \
	fi

vet: ## go vet
	$(GO) vet ./...

cross: ## build for macOS (where report and rules run) and for arm64 Linux
	GOOS=darwin $(GO) build ./...
	GOOS=linux GOARCH=arm64 $(GO) build ./...

GOLANGCI_LINT ?= $(shell command -v golangci-lint 2>/dev/null || echo $$($(GO) env GOPATH)/bin/golangci-lint)
lint: ## golangci-lint (v2.15.0, .golangci.yml); installs it with go install when missing
	@[ -x "$(GOLANGCI_LINT)" ] || $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
	$(GOLANGCI_LINT) run --timeout 10m ./...

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

bench: build ## the full overhead comparison with the ceiling sweep (see docs/overhead.md), results in bench.json
	./$(BIN) bench --sweep -o bench.json
	./$(BIN) report --format md bench.json

bench-apps: build ## application workloads (redis, nginx, sysbench, stress-ng) under every mode, 5 rounds of 1s (about 25 min, most of it auditd on signal storms), results in bench-apps.json
	@$(MAKE) --no-print-directory apt-install PACKAGES="$(APP_PACKAGES)"
	./$(BIN) bench --workload apps --modes none,audit,ebpf,auditd,bpftrace --rounds 5 --target 1s -o bench-apps.json
	./$(BIN) report --format md bench-apps.json

clean: ## remove build outputs
	rm -rf bin build dist bench-quick.json bench-demo.json bench.json bench-apps.json
