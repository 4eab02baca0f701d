# The README's two commands: `make run` and `make check`. meson + ninja do the work.
BUILD      ?= build
ASAN_BUILD ?= build-asan
STATE      ?= $(CURDIR)/.b4box
LISTEN     ?= 127.0.0.1:4100

.PHONY: all deps build run check test bench fuzz format format-check lint clean

all: build

deps:
	@scripts/install-deps

$(BUILD)/build.ninja:
	meson setup $(BUILD) --buildtype=debugoptimized

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

$(ASAN_BUILD)/build.ninja:
	meson setup $(ASAN_BUILD) --buildtype=debug -Db_sanitize=address,undefined \
		-Dc_args=-fno-sanitize-recover=all -Dfault_injection=true

run: build
	@echo "b4box: serving on $(LISTEN) with state in $(STATE) (Ctrl-C stops it). Try:"
	@echo "  curl -s -X POST $(LISTEN)/threads -H 'Content-Type: application/json' -d '{\"thread_id\": \"demo\"}'"
	@echo "  curl -s -X POST $(LISTEN)/threads/demo/tools/runBash -H 'Content-Type: application/json' -d '{\"command\": \"id\"}'"
	@echo "(more in README.md)"
	$(BUILD)/src/cli/b4box --state $(STATE) serve --listen $(LISTEN)

# Everything CI runs: style and layering checks, the sanitizer build, every test suite.
check: deps format-check lint $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD)
	meson test -C $(ASAN_BUILD) --suite full --print-errorlogs --num-processes 2 || true
	$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=10
	tools/test-summary $(ASAN_BUILD)/meson-logs/testlog.json

test: build
	meson test -C $(BUILD) --suite quick --print-errorlogs

bench: build
	bench/run $(BUILD)
	bench/http.sh $(BUILD)

# clang build with libFuzzer (also proves the tree builds warning-free with clang), then each
# fuzzer for FUZZ_SECONDS.
FUZZ_SECONDS ?= 30
fuzz: deps
	@[ -f build-fuzz/build.ninja ] || CC=clang meson setup build-fuzz -Dfuzz=true -Db_lundef=false --buildtype=debug >/dev/null
	ninja -C build-fuzz
	tools/fuzz-smoke build-fuzz $(FUZZ_SECONDS)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	@clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

lint:
	@tools/checksrc

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz
