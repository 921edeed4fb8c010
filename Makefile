# pi2hop — build, test, benchmark.
GO      ?= go
# Builds, vets and tests with file paths trimmed: the build cache then
# serves a fresh clone in another folder (CI's) what an earlier one built.
export GOFLAGS += -trimpath
BIN     := bin/pi2hop
PKGS    := ./...

WEBSRC  := instance/web/assets-src

.PHONY: all build web image test test-short stress bench bench-hop bench-lab lint lab docs man clean

all: build

# Recipes use pipes (go test -json | testsum): a failure anywhere fails.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

# -buildvcs=auto: the binary carries its commit (pi2hop version prints
# it) even where GOFLAGS says -buildvcs=false.
build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/pi2hop

# The browser view's chart library: installs the version package-lock.json
# pins (npm checks its integrity), keeps the registry's tarball beside the
# lock (the offline test compares the embedded files with it and it with
# the lock) and copies the files the page loads, with the licence, into
# the embedded assets.
web:
	cd $(WEBSRC) && npm ci --no-audit --no-fund --prefer-offline
	cd $(WEBSRC) && rm -f uplot-*.tgz && npm pack --silent --prefer-offline \
		uplot@$$(node -p 'require("./package-lock.json").packages["node_modules/uplot"].version')
	mkdir -p instance/web/assets/uplot
	cp $(WEBSRC)/node_modules/uplot/dist/uPlot.iife.min.js $(WEBSRC)/node_modules/uplot/dist/uPlot.min.css \
		$(WEBSRC)/node_modules/uplot/LICENSE instance/web/assets/uplot/

# The OCI image: a static binary (symbol tables stripped: a third of its
# size, and panics still print their stack) in a FROM scratch image, built offline
# (the context is the binary and deploy/Dockerfile, no base image to
# pull), tagged IMAGE:VERSION with the binary's own module version and
# revision (what pi2hop version prints) in tag spelling. Prints the tag.
IMAGE ?= pi2hop
image:
	@mkdir -p bin/image
	CGO_ENABLED=0 $(GO) build -buildvcs=auto -ldflags="-s -w" -o bin/image/pi2hop ./cmd/pi2hop
	@cp deploy/Dockerfile bin/image/Dockerfile
	@rm -rf bin/image/rootfs && mkdir -p bin/image/rootfs/run bin/image/rootfs/tmp && chmod 0755 bin/image/rootfs/run && chmod 1777 bin/image/rootfs/tmp
	@tag=$$($(GO) version -m bin/image/pi2hop | awk '$$1=="mod"{v=$$3} $$2~/^vcs.revision=/{r="-"substr($$2,14,12)} $$2=="vcs.modified=true"{m="-modified"} END{s=v r m; gsub(/[^A-Za-z0-9_.-]/,"",s); print s}'); \
	  docker build -q -t $(IMAGE):$$tag bin/image >/dev/null && echo $(IMAGE):$$tag

# The whole suite. As root it first installs the programs the tests run
# (the list in scripts/test-deps). Tests that need root and network
# namespaces skip themselves when not run as root; internal/testsum counts
# them and fails the run when one skipped in CI (CI=true), and prints each
# package's wall time and the slowest tests.
#
# Two lines of work run side by side. The first: lint (go vet compiles
# every package, which the test builds then find in the cache), then the
# packages whose tests measure rates, delays and pacing (TIMED; imagetest
# runs the compose lab and l4s-demo in containers), one at a time (-p 1),
# and so their timing tests: on a 2-core machine two of them at once
# starve each other; their root tests that measure nothing call
# t.Parallel and run together after them (-parallel). The second, at
# SCHED_IDLE (IDLE), so that it takes only the CPU time the first leaves
# and a timed test's thread that wakes takes the CPU back at once: cross,
# then the other packages two at a time with their unit tests again under
# the race detector (none of them times anything), then, under the race
# detector, the unit tests of TIMED and of the few other packages whose
# unit tests time a wait (SOLO). The race detector runs where a race can
# happen: in the packages whose code or tests start goroutines (RACE,
# found by their go statements); the rest run on one goroutine. lint has
# run go vet on every package, so the test runs leave it out (-vet=off).
# The logs are in bin/logs, printed at the end: lint.log, cross.log,
# others.log (the other packages' build errors; their tests are in the
# summary), race.log and solo.log (the race detector's).
MODULE := github.com/pi2hop/pi2hop
TIMED  := $(MODULE)/cmd/pi2hop $(MODULE)/hop $(MODULE)/flow $(MODULE)/internal/imagetest
SOLO   := $(TIMED) $(MODULE)/flow/ecnudp
GOSTMT := ^\s*go (func|[A-Za-z_][A-Za-z0-9_.]*[(])
RACE   := $(shell grep -rlE '$(GOSTMT)' --include='*.go' . | xargs -n1 dirname | sort -u | sed 's|^\.|$(MODULE)|')
IDLE   := chrt --idle 0
test:
	@./scripts/test-deps
	$(GO) build -o bin/testsum ./internal/testsum
	@rm -rf bin/test-artifacts bin/logs && mkdir -p bin/test-artifacts bin/logs
	( st=0; \
	  { $(IDLE) $(MAKE) --no-print-directory cross > bin/logs/cross.log 2>&1; echo $$? > bin/logs/cross.rc; \
	    { $(IDLE) $(GO) test -race -short -count=1 -vet=off -timeout 20m $(filter-out $(SOLO),$(filter $(RACE),$(shell $(GO) list $(PKGS)))) \
	        > bin/logs/race.log 2>&1; echo $$? > bin/logs/race.rc; } & \
	    $(IDLE) $(GO) test -p 2 -count=1 -vet=off -timeout 30m -json $(filter-out $(TIMED),$(shell $(GO) list $(PKGS))) \
	        > bin/logs/others.json 2> bin/logs/others.log; echo $$? > bin/logs/others.rc; \
	    wait; \
	    $(IDLE) $(GO) test -race -short -count=1 -vet=off -timeout 20m $(filter $(RACE),$(SOLO)) > bin/logs/solo.log 2>&1; echo $$? > bin/logs/solo.rc; } & \
	  $(MAKE) --no-print-directory lint > bin/logs/lint.log 2>&1; echo $$? > bin/logs/lint.rc; \
	  $(GO) test -p 1 -parallel 4 -count=1 -vet=off -timeout 30m -json -artifacts -outputdir $(CURDIR)/bin/test-artifacts $(TIMED) || st=1; \
	  wait; cat bin/logs/others.json; exit $$st ) | bin/testsum; st=$$?; \
	for f in lint cross others race solo; do \
	  echo "bin/logs/$$f.log:"; cat bin/logs/$$f.log; [ "$$(cat bin/logs/$$f.rc)" = 0 ] || st=1; \
	done; exit $$st

# The stress suite at full size (root): 20 000 idle connections on the
# web view's port, fd exhaustion via the web port and the control socket
# under a low RLIMIT_NOFILE, six batches of 500 concurrent stats, each
# file reader against /dev/zero and a 1 GB sparse file under a 1 GB
# address-space limit, 20 signals at random instants of a shell's
# start-up and teardown (seed printed; -stress-seed N replays), cleanup
# from a foreign namespace, and a 10-minute soak at 100 Mbit/s with TCP
# flows and a live set every 10 s. Each test prints its figures on a
# "figures:" line (docs/performance.md). make test runs the same tests at
# their quick size. Needs prlimit (util-linux) and iperf3 (scripts/test-deps).
stress:
	$(GO) test -count=1 -v -timeout 30m -run '^(TestStress|TestCleanupFromAForeignNamespace$$)' ./cmd/pi2hop -args -stress

# Unit tests only: no namespaces, no root.
test-short:
	$(GO) test -short -count=1 $(PKGS)

# gofmt, vet, and comments that state reasons rather than history: no
# dates, issue numbers or citations of documents outside the repository
# (internal/commentlint).
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) test -short -count=1 ./internal/commentlint

# The other systems pi2hop builds for: every package with its tests must
# type-check there (vet), and the binary must link without cgo. replay,
# analyze, flow and help work there; the Linux-only commands say what they
# need. Only vet and the one binary, to stay quick: the darwin binary is
# built for the arm64 its vet compiled every package for, so it links
# what vet left in the cache.
.PHONY: cross
cross:
	GOOS=darwin GOARCH=arm64 $(GO) vet $(PKGS)
	GOOS=windows GOARCH=amd64 $(GO) vet $(PKGS)
	GOOS=freebsd GOARCH=amd64 $(GO) vet $(PKGS)
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/pi2hop
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/pi2hop

# Reads `go test -bench` output and prints each headline figure with its
# ratio to the baseline from the same run.
BENCH_SUMMARY = \
  /^BenchmarkDualPI2EnqueueDequeue/ { d = $$3 } \
  /^BenchmarkFIFOEnqueueDequeue/    { f = $$3 } \
  /^BenchmarkCoDelEnqueueDequeue/   { cd = $$3 } \
  /^BenchmarkPIEEnqueueDequeue/     { pie = $$3 } \
  /^BenchmarkFQCodelEnqueueDequeue/ { fq = $$3 } \
  /^BenchmarkCoDelDroppingEnqueueDequeue/   { cdd = $$3 } \
  /^BenchmarkFQCodelDroppingEnqueueDequeue/ { fqd = $$3 } \
  /^BenchmarkDOCSISEnqueueDequeue/  { dc = $$3 } \
  /^BenchmarkLinkPacket\/fake/      { lf = $$3 } \
  /^BenchmarkLinkPacket\/dualpi2/   { ld = $$3 } \
  /^BenchmarkLinkFault\/off/        { fo = $$3 } \
  /^BenchmarkLinkFault\/before/     { fb = $$3 } \
  /^BenchmarkLinkFault\/after/      { fa = $$3 } \
  /^BenchmarkReplay80k/             { r = $$3 } \
  /^BenchmarkOwnerFlows\/flows=1\/table=false/ { of0 = $$3 } \
  /^BenchmarkOwnerFlows\/flows=1\/table=true/  { of1 = $$3 } \
  /^BenchmarkOwnerFlows\/flows=1000\/table=false/ { om0 = $$3 } \
  /^BenchmarkOwnerFlows\/flows=1000\/table=true/  { om1 = $$3 } \
  /^BenchmarkAnalyze1M/             { for (i = 3; i < NF; i++) if ($$(i+1) == "s/1M") a = $$i } \
  /^BenchmarkAnalyzeRSS\/10M/       { for (i = 3; i < NF; i++) { if ($$(i+1) == "peak-RSS-MB") m = $$i; if ($$(i+1) == "packets") mp = $$i } } \
  END { \
    print ""; print "summary (ratios against a baseline measured in this run):"; \
    if (d && f)   printf "  DualPI2 enqueue+dequeue  %7.1f ns/packet   %.2fx the tail-drop FIFO (%.1f ns); target <= 100 ns\n", d, d/f, f; \
    if (cd && f)  printf "  CoDel enqueue+dequeue    %7.1f ns/packet   %.2fx the tail-drop FIFO; target <= 200 ns\n", cd, cd/f; \
    if (pie && f) printf "  PIE enqueue+dequeue      %7.1f ns/packet   %.2fx the tail-drop FIFO; target <= 200 ns\n", pie, pie/f; \
    if (fq && f)  printf "  fq_codel enqueue+dequeue %7.1f ns/packet   %.2fx the tail-drop FIFO; target <= 200 ns\n", fq, fq/f; \
    if (cdd && f) printf "    CoDel, dropping state  %7.1f ns/packet   %.2fx the tail-drop FIFO; target <= 200 ns\n", cdd, cdd/f; \
    if (fqd && f) printf "    fq_codel, dropping     %7.1f ns/packet   %.2fx the tail-drop FIFO; target <= 200 ns\n", fqd, fqd/f; \
    if (dc && f)  printf "  docsis enqueue+dequeue   %7.1f ns/packet   %.2fx the tail-drop FIFO; target <= 200 ns\n", dc, dc/f; \
    if (ld && lf) printf "  link + DualPI2           %7.1f ns/packet   %.2fx link + bare queue (%.1f ns)\n", ld, ld/lf, lf; \
    if (fo && ld) printf "  link + DualPI2, ECN fault off %7.1f ns/packet  %+.1f ns against link + DualPI2; target <= 5 ns\n", fo, fo-ld; \
    if (fb && fo) printf "    ECN fault before, selectors %7.1f ns/packet  %+.1f ns against fault off\n", fb, fb-fo; \
    if (fa && fo) printf "    ECN fault after the queue   %7.1f ns/packet  %+.1f ns against fault off\n", fa, fa-fo; \
    if (of0 && of1) printf "  owner path, flow table   %+7.1f ns/packet   %.2fx the owner without it (%.1f ns), 1 flow; target <= +15 ns\n", of1-of0, of1/of0, of0; \
    if (om0 && om1) printf "    1000 flows in turn     %+7.1f ns/packet   %.2fx the owner without it (%.1f ns)\n", om1-om0, om1/om0, om0; \
    if (fo && ld) printf "  link + DualPI2, ECN fault off %7.1f ns/packet  %+.1f ns against link + DualPI2; target <= 5 ns\n", fo, fo-ld; \
    if (fb && fo) printf "    ECN fault before, selectors %7.1f ns/packet  %+.1f ns against fault off\n", fb, fb-fo; \
    if (fa && fo) printf "    ECN fault after the queue   %7.1f ns/packet  %+.1f ns against fault off\n", fa, fa-fo; \
    if (r)        printf "  replay, 80k packets      %7.3f s           %.2fx the 1 s target\n", r/1e9, r/1e9; \
    if (a)        printf "  analyze, 1M packets      %7.2f s           %.2fx the 10 s target\n", a, a/10; \
    if (m)        printf "  analyze peak RSS         %7.1f MB          %.2fx the 200 MB target, one-point capture of %d packets\n", m, m/200, mp; \
  }

# Benchmarks of the packet path, replay and analysis (no root). Each
# figure is printed with its ratio to a baseline measured in the same run:
# DualPI2 against the tail-drop FIFO, the link model against a bare
# queue, the owner's path with the flow table against it without, replay
# and analyze (time, and peak RSS of `pi2hop analyze` on a
# generated 10 M-packet one-point capture) against their targets.
bench:
	@mkdir -p bin
	$(GO) test -run '^$$' -bench . -benchmem ./aqm ./shaper ./pcap ./analyze ./replay ./cmd/pi2hop | tee bin/bench.txt
	$(GO) test -short -run '^$$' -bench 'OwnerFlows|FlowAccounting' -benchmem ./hop | tee -a bin/bench.txt
	@awk '$(BENCH_SUMMARY)' bin/bench.txt

# The live hop against the kernel router, in network namespaces (root; not
# in CI): throughput, shaped throughput, idle RTT, pacing lateness, CPU.
bench-hop:
	$(GO) run ./cmd/benchhop $(BENCH_ARGS)

# Every lab scenario as its figures are quoted (root; not in CI): --quick
# durations, l4s-demo three times interleaved (figures are medians), each
# printing its report's checks; reports in bin/bench-lab/SCENARIO. make
# test runs each scenario once (l4s-demo in a container) but aqm-zoo and
# wifi; this is the rest.
bench-lab: build
	@rm -rf bin/bench-lab && mkdir -p bin/bench-lab
	./$(BIN) lab l4s-demo --quick --repeat 3 --out bin/bench-lab/l4s-demo
	for s in coexist bdp prague aqm-zoo classic-ecn wifi ecn-faults; do \
		./$(BIN) lab $$s --quick --out bin/bench-lab/$$s || exit 1; done

# The lab's default scenario, l4s-demo, through the hop in network
# namespaces (needs root: sudo make lab). LAB_ARGS passes more, e.g.
# LAB_ARGS="coexist --quick".
lab: build
	./$(BIN) lab $(LAB_ARGS)

# docs/cli.md is every command's help as Markdown, generated from the
# commands themselves, and docs/json.md's rows of the queue knobs in
# replay's config object from the table of settings; unit tests fail
# when either is stale.
docs: build
	./$(BIN) help --markdown > docs/cli.md
	go test ./instance -run '^TestKnobRowsDocumented$$' -update-docs

# The man page pi2hop(1), from the same help: read it with man -l bin/pi2hop.1.
man: build
	./$(BIN) help --man > bin/pi2hop.1

clean:
	rm -rf bin
