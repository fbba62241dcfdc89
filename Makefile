# uswap: the two commands of the README, and their parts.
#   make run   install what is missing, build, run the main job
#   make test  install what is missing, build, run the whole test suite
#              (release build, then an allocator-only build without
#              the optional devices, then ASan+UBSan, then TSan on the
#              concurrency tests, then the fuzzers under clang's
#              libFuzzer, then the whole-stack soak `uswap stress` for
#              5 minutes under ASan+UBSan and 5 under TSan)
# Debian packages the build needs (Debian 12):
DEBS := gcc meson ninja-build pkg-config liburcu-dev libcmocka-dev \
        liblz4-dev libzstd-dev libxxhash-dev liburing-dev libmimalloc-dev \
        libjson-c-dev libnbd-dev nbdkit libsodium-dev stress-ng gnuplot-nox \
        bash-completion libinih-dev libsmartcols-dev default-jdk-headless nodejs

BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_TSAN ?= build-tsan
BUILD_FUZZ ?= build-fuzz
# Only test-fuzz needs these: clang with libFuzzer (Debian 12: clang 14).
FUZZ_DEBS  := clang libclang-rt-14-dev
FUZZ_SECONDS ?= 20
MESON_TEST := meson test --print-errorlogs --num-processes 2

.PHONY: all deps deps-fuzz build run run-usemem test test-release test-minimal test-asan test-tsan \
	test-fuzz test-soak bench install uninstall deb test-deb clean

all: build

# install_missing(PACKAGES): install those not installed yet; apt-get
# needs root (or sudo).
define install_missing
	@missing=""; for p in $(1); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get install -y --no-install-recommends $$missing || \
		{ $$SUDO apt-get update && $$SUDO apt-get install -y --no-install-recommends $$missing; }; \
	fi
endef

deps:
	$(call install_missing,$(DEBS))

deps-fuzz:
	$(call install_missing,$(FUZZ_DEBS))

# -g changes no code: it names our functions in the backtraces that the
# tests print of a run that hangs (tests/run_lib.sh).
$(BUILD)/build.ninja: | deps
	meson setup $(BUILD) --buildtype=release -Ddebug=true -Ddebug_level=1

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

# The main job: an unmodified program under `uswap run` (tools/main-job.sh):
# GNU sort of ~46 MB (Debian's GPL-3 text repeated) with sort -S 160M,
# its heap kept under a 24 MiB resident limit and swapped to 4 zram
# devices; sort -c checks the output and it must be byte-identical to
# sort's without uswap. A few seconds here.
RUN_DATA ?= /usr/share/common-licenses/GPL-3
RUN_LIMIT ?= 24M
run: build
	sh tools/main-job.sh ./$(BUILD)/tools/uswap $(RUN_LIMIT) $(RUN_DATA)

# The previous main job: usemem on the userfaultfd pager. 2 workers x 256
# MiB write and read back text under a 128 MiB resident limit, swapping to
# 4 zram devices of default priority; every page is checked. ~10 s here.
run-usemem: build
	./$(BUILD)/tools/uswap bench usemem --workers 2 --size 256M --limit 128M \
		--data $(RUN_DATA)

test: test-release test-minimal test-asan test-tsan test-fuzz test-soak

test-release: build
	$(MESON_TEST) -C $(BUILD)

# An allocator-only build (meson options nbd, crypt and io_uring disabled)
# in a directory of its own under TMPDIR: libuswap needs none of libnbd,
# libsodium, liburing, and a spec naming a device left out is refused by name.
test-minimal: deps
	sh tests/minimal_build.sh

$(BUILD_ASAN)/build.ninja: | deps
	meson setup $(BUILD_ASAN) --buildtype=debug -Ddebug_level=2 \
		-Db_sanitize=address,undefined -Db_lundef=false

test-asan: deps $(BUILD_ASAN)/build.ninja
	ninja -C $(BUILD_ASAN)
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	ASAN_OPTIONS=detect_leaks=1 $(MESON_TEST) -C $(BUILD_ASAN)

$(BUILD_TSAN)/build.ninja: | deps
	meson setup $(BUILD_TSAN) --buildtype=debug -Ddebug_level=2 \
		-Db_sanitize=thread -Db_lundef=false

# TSan's shadow layout clashes with this kernel's wide mmap randomisation,
# so its tests run with ASLR off (setarch -R), which costs nothing here.
test-tsan: deps $(BUILD_TSAN)/build.ninja
	ninja -C $(BUILD_TSAN)
	USWAP_STRESS_SCALE=0.1 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	setarch -R $(MESON_TEST) -C $(BUILD_TSAN) --suite stress

$(BUILD_FUZZ)/build.ninja: | deps deps-fuzz
	CC=clang CFLAGS=-fsanitize=fuzzer-no-link meson setup $(BUILD_FUZZ) \
		--buildtype=debug -Ddebug_level=2 \
		-Db_sanitize=address,undefined -Db_lundef=false

# The fuzzers under libFuzzer with ASan+UBSan for FUZZ_SECONDS each: the
# swap-header parser from a seed corpus made by mkswap (fuzz_header.sh),
# and every text parser (device specs, CLI arguments, lab policies and
# workloads: fuzz_parsers.c). The whole fuzz build carries libFuzzer's
# coverage instrumentation (fuzzer-no-link), so the library's parsers
# guide the search, not only the targets; the other suites run in the
# builds above.
test-fuzz: deps deps-fuzz $(BUILD_FUZZ)/build.ninja
	ninja -C $(BUILD_FUZZ) tests/fuzz_header tests/fuzz_parsers
	USWAP_FUZZ_SECONDS=$(FUZZ_SECONDS) UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	$(MESON_TEST) -C $(BUILD_FUZZ) --suite fuzz --no-rebuild

# The soak (docs/reliability.md): `uswap stress` drives every layer at once with
# faults injected and devices swapped off and on, for SOAK_SECONDS under
# ASan+UBSan and as long under TSan. A failure prints the seed to replay.
SOAK_SECONDS ?= 300
test-soak: deps $(BUILD_ASAN)/build.ninja $(BUILD_TSAN)/build.ninja
	ninja -C $(BUILD_ASAN) tools/uswap
	ninja -C $(BUILD_TSAN) tools/uswap
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
	./$(BUILD_ASAN)/tools/uswap stress --duration $(SOAK_SECONDS)
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	setarch -R ./$(BUILD_TSAN)/tools/uswap stress --duration $(SOAK_SECONDS)

bench: build
	bash bench/run-alloc.sh ./$(BUILD)/tools/uswap

# Install the library, headers, uswap.pc, uswap, uswap-bench, the preload
# agent and the man pages: under PREFIX (meson's --prefix, set on the
# build directory), staged in DESTDIR when given (packaging).
PREFIX  ?= /usr/local
DESTDIR ?=
install: build
	meson configure $(BUILD) --prefix=$(PREFIX)
	meson install -C $(BUILD) $(if $(DESTDIR),--destdir $(DESTDIR))

# Debian packages (debian/): uswap, libuswap0, libuswap-dev, built from a
# copy of the tree into DEB_DIR; test-deb builds them, runs lintian,
# installs them, runs `uswap run` and an outside program from them and
# purges them (tests/deb_check.sh; root only: it installs into /usr).
DEB_DIR ?= deb
deb:
	$(call install_missing,debhelper dpkg-dev)
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/uswap
	git ls-files -co --exclude-standard | tar -cf - -T - | tar -xf - -C $(DEB_DIR)/uswap
	cd $(DEB_DIR)/uswap && dpkg-buildpackage -b -us -uc
	@ls $(DEB_DIR)/*.deb

test-deb:
	bash tests/deb_check.sh .

# Remove what the last `make install` put in place (meson's install log).
uninstall:
	ninja -C $(BUILD) uninstall

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_TSAN) $(BUILD_FUZZ) $(DEB_DIR)
