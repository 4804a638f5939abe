#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# gpu-check.sh [stellar-gpu-check options]: on a machine with an NVIDIA GPU
# and its driver, build libstellar-gpu and stellar-gpu-check and report
# whether GPU memory can be exported as a dma-buf and registered on a
# Stellar device (see userlib/gpu/stellar_gpu_check.c).  Needs only a C
# compiler and libibverbs' headers (libibverbs-dev); CUDA is loaded at run
# time.  Exit status: stellar-gpu-check's (2: no CUDA driver or no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build
cc -std=gnu11 -O2 -Wall -fPIC -fvisibility=hidden -shared \
	-Wl,-soname,libstellar-gpu.so.1 -o build/libstellar-gpu.so.1 \
	userlib/gpu/stellar_gpu.c -libverbs -ldl -lpthread
ln -sf libstellar-gpu.so.1 build/libstellar-gpu.so
cc -std=gnu11 -O2 -Wall -Iuserlib/gpu -o build/stellar-gpu-check \
	userlib/gpu/stellar_gpu_check.c -Lbuild -lstellar-gpu \
	-Wl,-rpath,'$ORIGIN' -libverbs -ldl
exec build/stellar-gpu-check "$@"
