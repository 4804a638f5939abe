# SPDX-License-Identifier: GPL-2.0-only
#
# Stellar top-level Makefile.
#   make            stellar.ko + libstellar provider + stellarctl + tests; plus
#                   build/kmod/KVER/stellar.ko for every test kernel
#                   (scripts/kver.sh --all: Debian's 6.1 and backports 6.12)
#   make check      every test (unit, VM scenarios on one and two hosts)
#   make demo       boot the test VM, create Stellar devices, move traffic
#   make bench      perftest on Stellar and on raw rxe, as ratios
#   make install    module (+depmod) and provider
#   make fuzz       a long fuzzing session in the test VM (STL_FUZZ_SECONDS,
#                   default 900; STL_FUZZ_SEED; see tests/fuzz/fuzz-guest.sh)

# The kernel that linux-image-amd64 installed (Debian 12's 6.1): ./stellar.ko,
# `make install`.
KVER ?= $(shell scripts/kver.sh 2>/dev/null)
KDIR ?= /lib/modules/$(KVER)/build
# Every test kernel; the VM tests load build/kmod/$(uname -r)/stellar.ko.
KVERS ?= $(shell scripts/kver.sh --all 2>/dev/null)

.PHONY: all module kmods userlib tools tests check check-debug debug-kernel unit demo bench install clean lint deps fuzz

all: module kmods userlib tools tests

module:
	@test -n "$(KVER)" || { echo "no kernel headers: run scripts/deps.sh"; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

kmods:
	@test -n "$(KVERS)" || { echo "no kernel headers: run scripts/deps.sh"; exit 1; }
	+@for k in $(KVERS); do scripts/build-module.sh $$k >/dev/null || exit 1; done

userlib:
	$(MAKE) -C userlib

# stellarctl, the operator's tool (build/stellarctl)
tools:
	$(MAKE) -C tools/stellarctl
	$(MAKE) -C tools/spraysim

tests:
	$(MAKE) -C tests/kernel
	$(MAKE) -C tests/fuzz

deps:
	scripts/deps.sh

check:
	scripts/check.sh

# The lockdep+KASAN test kernel (cached in build/debug-kernel/), and make
# check with every one-VM scenario on it (make check runs most of them).
debug-kernel:
	scripts/debug-kernel.sh

check-debug:
	STL_CHECK_DEBUG=full scripts/check.sh

demo:
	scripts/demo.sh

bench:
	scripts/bench.sh

lint:
	scripts/lint.sh

# Boot time included; the guest gets STL_FUZZ_SECONDS for the fuzzer itself.
STL_FUZZ_SECONDS ?= 900
fuzz: all
	KVER=$(KVER) STL_FUZZ_SECONDS=$(STL_FUZZ_SECONDS) STL_VM_QUIET=$${STL_VM_QUIET:-0} \
		scripts/vm.sh -t $$(($(STL_FUZZ_SECONDS) + 600)) tests/fuzz/fuzz-guest.sh

# DESTDIR= stages everything under a root (packaging); empty = this system.
install: module userlib
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_PATH=$(DESTDIR) modules_install
	depmod -b $(if $(DESTDIR),$(DESTDIR),/) -a $(KVER)
	$(MAKE) -C userlib install DESTDIR=$(DESTDIR)
	$(MAKE) -C tools/stellarctl install DESTDIR=$(DESTDIR)
	install -D -m 0755 tools/cni/stellar $(DESTDIR)/usr/lib/cni/stellar

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	rm -rf build
