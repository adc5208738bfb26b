#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Reproduces docs/results/gpu-scale.md: board -> host -> GPU on several GPUs at once
# (dmabench --gpus), one board fanning out to N GPUs and N boards each feeding its own GPU,
# with the data checked on every GPU, against what each GPU's own host link and the host's
# memory carry.
#
#   scripts/gpu-scale.sh build BUNDLE      static binaries into BUNDLE (as scripts/gpu-pipeline.sh)
#   scripts/gpu-scale.sh run BUNDLE OUT    the checks and sweeps on a machine with GPUs
#
# Environment for run: PRESETS (default "gen3x8 gen4x16"), SIZES (default 16M:1G:4),
# NS (GPU counts, default: 1 2 4 8 up to the GPUs present).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

run() {
	local bundle=$1 out=$2 rc=0 gpus n p g list sizes=${SIZES:-16M:1G:4}
	local dmabench=$bundle/dmabench common=(--no-progress --plot none -r 2)
	mkdir -p "$out"
	gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
	[[ $gpus -gt 0 ]] || { echo "no GPU here" >&2; return 77; }
	{
		echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
		echo "revision: $(cat "$bundle/REVISION" 2>/dev/null || echo unknown)"
		echo "host: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
		echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
		lscpu 2>/dev/null | grep -E '^(Socket|NUMA node)' || true
		nvidia-smi --query-gpu=index,name,pci.bus_id,pcie.link.gen.max,pcie.link.width.max,memory.total \
			--format=csv 2>&1 || true
		nvidia-smi topo -m 2>&1 || true
	} | tee "$out/environment.txt"
	local ns=${NS:-}
	if [[ -z $ns ]]; then
		for n in 1 2 4 8; do [[ $n -le $gpus ]] && ns="$ns $n"; done
	fi

	echo "== the multi-GPU stage's test (bufmgr/cuda_multi.hpp)"
	"$bundle/test_gpu_multi" >"$out/test_gpu_multi.log" 2>&1 || rc=1
	grep -E '^(not ok|# )' "$out/test_gpu_multi.log" || true
	echo "== smoke: data checked on every GPU (one board fanning out, a board per GPU)"
	"$dmabench" -d emu:link=gen3x8,nt=0 --gpus "0-$((gpus - 1))" -m fi-pb1Mx4 -s 4K,1M,9M,64M -n 1 -r 1 -w 0 \
		--verify --no-progress --plot none -o "$out/smoke-fanout" >"$out/smoke-fanout.txt" 2>&1 || rc=1
	if [[ $gpus -ge 2 ]]; then
		"$dmabench" -d emu:link=gen3x8,nt=0 --gpus "0-$((gpus - 1))" --board-per-gpu -m fi-pb1Mx4 \
			-s 4K,1M,9M,64M -n 1 -r 1 -w 0 --verify --no-progress --plot none -o "$out/smoke-perboard" \
			>"$out/smoke-perboard.txt" 2>&1 || rc=1
	fi
	grep -h -E 'VERIFY|fi-pb1Mx4 ' "$out"/smoke-*.txt || true

	echo "== the host: its copy limit and each GPU's own host link"
	"$dmabench" -d none -m memcpy-mt8 -s 256M,1G "${common[@]}" -o "$out/host-memcpy" \
		>"$out/host-memcpy.txt" 2>&1 || rc=1
	local cpus per i
	cpus=$(nproc)
	"$dmabench" -d none -m "memcpy-mt16,memcpy-mt32,memcpy-mt$((cpus < 64 ? cpus : 64))" -s 256M,1G \
		"${common[@]}" -o "$out/host-memcpy-mt" >"$out/host-memcpy-mt.txt" 2>&1 || rc=1
	# the virtual boards alone, as many at once as there are GPUs (one process each, on its own
	# share of the CPUs): what the boards deliver without a GPU in the way
	per=$((cpus / gpus))
	for p in ${PRESETS:-gen3x8 gen4x16}; do
		for ((i = 0; i < gpus; i++)); do
			taskset -c "$((i * per))-$((i * per + per - 1))" "$dmabench" -d "emu:link=$p,nt=0" -m c2h-umem \
				-s 256M,1G "${common[@]}" -o "$out/alone-$p-board$i" >"$out/alone-$p-board$i.txt" 2>&1 &
		done
		wait || rc=1
	done
	for ((g = 0; g < gpus; g++)); do
		"$dmabench" -d none --gpus "$g" -m hg -s "$sizes" "${common[@]}" -o "$out/hg-gpu$g" \
			>"$out/hg-gpu$g.txt" 2>&1 || rc=1
	done
	for n in $ns; do
		list="0-$((n - 1))"
		"$dmabench" -d none --gpus "$list" -m hg -s "$sizes" "${common[@]}" -o "$out/hg-n$n" \
			>"$out/hg-n$n.txt" 2>&1 || rc=1
	done

	for p in ${PRESETS:-gen3x8 gen4x16}; do
		for n in $ns; do
			list="0-$((n - 1))"
			echo "== emu:link=$p: one board -> $n GPU(s)"
			"$dmabench" -d "emu:link=$p,nt=0" --gpus "$list" -m c2h-umem,fi-pb4Mx8 -s "$sizes" "${common[@]}" \
				-o "$out/fanout-$p-n$n" >"$out/fanout-$p-n$n.txt" 2>&1 || rc=1
			[[ $n -ge 2 ]] || continue
			echo "== emu:link=$p: $n boards -> $n GPUs"
			"$dmabench" -d "emu:link=$p,nt=0" --gpus "$list" --board-per-gpu -m fi-pb4Mx8 -s "$sizes" \
				"${common[@]}" -o "$out/perboard-$p-n$n" >"$out/perboard-$p-n$n.txt" 2>&1 || rc=1
		done
	done
	for f in "$out"/hg-*.txt "$out"/fanout-*.txt "$out"/perboard-*.txt "$out"/host-memcpy.txt; do
		echo "-- ${f##*/}"
		sed -n '/^summary/,/^$/p' "$f" | sed -n '3,6p'
	done
	return $rc
}

case ${1:-} in
build) exec "$top/scripts/gpu-pipeline.sh" build "${2:?bundle directory}" ;;
run) run "${2:?bundle directory}" "${3:?output directory}" ;;
*) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
