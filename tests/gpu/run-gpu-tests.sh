#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Builds and runs the GPU tests of the CUDA stage on a machine with a GPU, nvcc, a C/C++
# compiler and Boost headers; no configure, no libcheck needed:
#
#   tests/gpu/run-gpu-tests.sh
#
# Builds libpcidriver, the virtual board and libmprace from the sources their Makefiles list and
# the GPU tests into $BUILD (default: build-gpu/ in the source tree); then runs
#   test_gpu_refuse   kernel-memory buffers refused before any CUDA call
#   test_gpu_stage    FPGA -> host -> GPU and back, data checked on the GPU and by the board
#   test_gpu_dmabuf   GPU memory exported as a dma-buf; the virtual board refuses it
#   test_gpu_multi    several GPUs at once: one board fanning out, a board per GPU
#   test_gpu_resident the resident receive path: a resident block polls the completion records
#   test_gpu_initiated GPU-initiated transfers: a kernel writes descriptors and rings the doorbell
#   test_gpu_net      the network stage into a GPU (where pkg-config finds UCX)
# The figures of the GPU paths are dmabench's (modes hg, gh, fi, fi-serial, gi, ...):
# scripts/gpu-pipeline.sh builds it with the GPU tests and runs the sweeps.
# Exit status: 0 if every test passed (or skipped: no GPU), 1 otherwise.
# Environment: NVCC, CUDA_HOME, CC, CXX, BUILD, JOBS.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$top/build-gpu}
NVCC=${NVCC:-$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)}
cuda_home=${CUDA_HOME:-$(dirname "$(dirname "$NVCC")")}
CC=${CC:-gcc}
CXX=${CXX:-g++}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 4)}
[ -x "$NVCC" ] || { echo "run-gpu-tests: nvcc not found (set NVCC or CUDA_HOME)" >&2; exit 1; }
mkdir -p "$build/obj"
cd "$top"
net_test=
pkg-config --exists ucx 2>/dev/null && net_test=test_gpu_net

# The library sources, as the automake fragments list them (continuation lines joined).
sources() { # FILE... -> the .c/.cpp words of the *_SOURCES assignments in them
	for f in "$@"; do
		[ -f "$f" ] && sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' "$f"
	done | grep -E '^[a-z_]+_la_SOURCES[[:space:]]*\+?=' | tr ' \t' '\n\n' | grep -E '\.(c|cpp)$' || true
}
pd_srcs="$(sources pcidriver/lib/Makefile.am | sed 's|^|pcidriver/lib/|') $(sources vboard/Makefile.am | grep -v plugin.c | sed 's|^|vboard/|')"
mp_srcs=$(sources libmprace/Makefile.am libmprace/src/Makefile.inc | sed 's|^|libmprace/|')

# A small makefile, so that the build runs in parallel and only redoes what changed.
mk=$build/Makefile
{
	echo "CC = $CC"
	echo "CXX = $CXX"
	echo "NVCC = $NVCC"
	echo "TOP = $top"
	echo "CPPFLAGS = -D_GNU_SOURCE -DPD_BACKEND_DIR='\"/nonexistent\"' -I\$(TOP)/vboard/include -I\$(TOP)/vboard/src -I\$(TOP)/pcidriver/lib -I\$(TOP)/pcidriver/include -I\$(TOP)/libmprace/include -I\$(TOP)/spec/include -I\$(TOP)/libbufmgr/include -I\$(TOP)/tests/gpu -I$cuda_home/include"
	echo "CFLAGS = -std=gnu11 -O2 -g -pthread"
	echo "CXXFLAGS = -std=c++17 -O2 -g -pthread -Wall"
	echo "NVCCFLAGS = -std=c++17 -O2 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90"
	echo "LIBS = -L$cuda_home/lib64 -L$cuda_home/targets/x86_64-linux/lib -lcudart_static -ldl -lrt -lpthread -lm"
	objs=
	for s in $pd_srcs $mp_srcs; do
		o=obj/$(echo "$s" | tr '/' '_' | sed 's/\.[a-z]*$/.o/')
		objs="$objs $o"
		case $s in
		*.c) echo "$o: \$(TOP)/$s; \$(CC) \$(CPPFLAGS) \$(CFLAGS) -I\$(TOP)/$(dirname "$s") -MMD -c -o \$@ \$<" ;;
		*.cpp) echo "$o: \$(TOP)/$s; \$(CXX) \$(CPPFLAGS) \$(CXXFLAGS) -I\$(TOP)/$(dirname "$s") -MMD -c -o \$@ \$<" ;;
		esac
	done
	echo "LIBOBJS =$objs"
	echo "all: test_gpu_refuse test_gpu_stage test_gpu_dmabuf test_gpu_multi test_gpu_resident test_gpu_initiated $net_test"
	echo "obj/gpu_pattern.o: \$(TOP)/tests/gpu/gpu_pattern.cu \$(TOP)/tests/gpu/gpu_pattern.h; \$(NVCC) \$(NVCCFLAGS) -std=c++17 -I\$(TOP)/spec/include -I\$(TOP)/libbufmgr/include -I\$(TOP)/pcidriver/lib -c -o \$@ \$<"
	for t in test_gpu_refuse test_gpu_stage test_gpu_dmabuf test_gpu_multi; do
		echo "$t: \$(TOP)/tests/gpu/$t.cpp obj/gpu_pattern.o \$(LIBOBJS); \$(CXX) \$(CPPFLAGS) \$(CXXFLAGS) -MMD -o \$@ \$< obj/gpu_pattern.o \$(LIBOBJS) \$(LIBS)"
	done
	[ -z "$net_test" ] || echo "test_gpu_net: \$(TOP)/tests/gpu/test_gpu_net.cpp obj/gpu_pattern.o \$(LIBOBJS); \$(CXX) \$(CPPFLAGS) $(pkg-config --cflags ucx) \$(CXXFLAGS) -MMD -o \$@ \$< obj/gpu_pattern.o \$(LIBOBJS) $(pkg-config --libs ucx) \$(LIBS)"
	for t in test_gpu_resident test_gpu_initiated; do
		echo "$t: \$(TOP)/tests/gpu/$t.cu \$(LIBOBJS); \$(NVCC) \$(NVCCFLAGS) \$(CPPFLAGS) -o \$@ \$< \$(LIBOBJS) \$(LIBS)"
	done
	echo "-include obj/*.d *.d"
} >"$mk"
echo "== build in $build (nvcc: $NVCC)"
make -s -C "$build" -j"$jobs" all

status=0
run_test() {
	echo "== $1"
	rc=0
	"$build/$1" || rc=$?
	case $rc in
	0) echo "== $1: PASS" ;;
	77) echo "== $1: SKIP (no GPU)" ;;
	*) echo "== $1: FAIL (exit $rc)"; status=1 ;;
	esac
}
run_test test_gpu_refuse
run_test test_gpu_stage
run_test test_gpu_dmabuf
run_test test_gpu_multi
run_test test_gpu_resident
run_test test_gpu_initiated
[ -z "$net_test" ] || run_test test_gpu_net

echo "== run-gpu-tests: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
