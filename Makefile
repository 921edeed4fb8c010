# pi2hop — build, test, benchmark.
GO      ?= go
BIN     := bin/pi2hop
PKGS    := ./...

.PHONY: all build test test-short bench bench-hop lint lab clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/pi2hop

# The whole suite. Tests that need root and network namespaces skip
# themselves when not run as root; CI runs as root.
test: lint
	$(GO) test -count=1 -timeout 30m $(PKGS)

# Unit tests only: no namespaces, no root.
test-short:
	$(GO) test -short -count=1 $(PKGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

# Microbenchmarks of the packet path (virtual time, no root).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./aqm ./shaper

# The lab's default scenario, l4s-demo, through the hop in network
# namespaces (needs root: sudo make lab). LAB_ARGS passes more, e.g.
# LAB_ARGS="coexist --quick".
lab: build
	./$(BIN) lab $(LAB_ARGS)

clean:
	rm -rf bin
