# The README's two commands: `make run` and `make check`. meson + ninja do the work.
BUILD      ?= build
ASAN_BUILD ?= build-asan
STATE      ?= $(CURDIR)/.b4box
LISTEN     ?= 127.0.0.1:4100
# `make run CONFIG=b4box.json` serves with a config file (default: none, the defaults).
CONFIG     ?=
# `make install PREFIX=/usr DESTDIR=/tmp/root`: PREFIX (re)configures $(BUILD)'s prefix
# when given (the keeper's and the probe helper's installed paths are compiled in);
# DESTDIR stages the tree. MESON_INSTALL_FLAGS e.g. --no-rebuild (tests/install).
PREFIX     ?=
DESTDIR    ?=
MESON_INSTALL_FLAGS ?=
# What `make run` builds: the binary, b4box-full (which runs `serve`), the keeper and the probe
# helper (ninja target names).
RUN_TARGETS = src/cli/b4box src/cli/b4box-full src/keeper/b4box-keeper src/probe/b4box-probe-helper

.PHONY: all deps deps-serve build run check test bench fuzz format format-check lint clean \
	install

all: build

# Everything (tests, fuzzing, docker, man pages, unit checks); deps-serve: what `make run` needs.
deps:
	@scripts/install-deps all

deps-serve:
	@scripts/install-deps serve

# Tests are configured in when cmocka is there (`make run` on a fresh machine installs only
# the serve set); `make test` switches them on after installing everything.
$(BUILD)/build.ninja:
	meson setup $(BUILD) --buildtype=debugoptimized \
		-Dtests=$$(pkg-config --exists cmocka && echo true || echo false)

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

$(ASAN_BUILD)/build.ninja:
	meson setup $(ASAN_BUILD) --buildtype=debug -Db_sanitize=address,undefined \
		-Dc_args=-fno-sanitize-recover=all -Dfault_injection=true

run: deps-serve $(BUILD)/build.ninja
	ninja -C $(BUILD) $(RUN_TARGETS)
	@echo "b4box: serving on $(LISTEN) with state in $(STATE) (Ctrl-C stops it). Try:"
	@echo "  curl -s -X POST $(LISTEN)/threads -H 'Content-Type: application/json' -d '{\"thread_id\": \"demo\"}'"
	@echo "  curl -s -X POST $(LISTEN)/threads/demo/tools/runBash -H 'Content-Type: application/json' -d '{\"command\": \"id\"}'"
	@echo "(more in README.md)"
	$(BUILD)/src/cli/b4box $(if $(CONFIG),-c $(CONFIG)) --state $(STATE) serve --listen $(LISTEN)

# Everything CI runs: style and layering checks, the sanitizer build, every test suite.
check: deps format-check lint $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD)
	meson test -C $(ASAN_BUILD) --suite full --print-errorlogs --num-processes 2 || true
	$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=10
	tools/test-summary $(ASAN_BUILD)/meson-logs/testlog.json

test: build
	@scripts/meson-option $(BUILD) tests true
	ninja -C $(BUILD)
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

install: $(BUILD)/build.ninja
	@scripts/meson-option $(BUILD) prefix $(PREFIX)
	meson install -C $(BUILD) $(MESON_INSTALL_FLAGS) $(if $(DESTDIR),--destdir $(DESTDIR))

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz
