#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Reproduces docs/results/bufmgr.md: the buffer managers (DoubleBuffer, PooledBuffer) against
# raw DMA on the virtual board at gen3x8 and gen4x16, with the plain copy and with the int16 <->
# float conversion, on one copy thread and on several, next to the host's own copy limit; the
# same conversion on the GPU stage (both paths) against its identity pipeline; and GPU -> board
# at gen4x16 with and without the board model reading the data.
#
#   scripts/bufmgr-speed.sh build BUNDLE      static binaries into BUNDLE (scripts/gpu-pipeline.sh build)
#   scripts/bufmgr-speed.sh run BUNDLE OUT    run the sweeps, write results into OUT
#   scripts/bufmgr-speed.sh all OUT           both, on one machine
#
# Environment for run: PRESETS (default "gen3x8 gen4x16"), THREADS (copy threads to compare,
# default "1 4 8"), SIZES (default 1M,8M,64M,256M), REPEAT (default 3).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# The reference (raw DMA on kernel memory, what MpraceTransfer uses) and the algorithms of the
# issue's table, each with the plain copy and with the conversion.
ALGOS=(db8M db4M pb1Mx8 pb4Mx8)

run() {
	local bundle=$1 out=$2 rc=0 p t a modes
	mkdir -p "$out"
	{
		echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
		echo "revision: $(cat "$bundle/REVISION" 2>/dev/null || echo unknown)"
		echo "host: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
		echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	} | tee "$out/environment.txt"
	local sizes=${SIZES:-1M,8M,64M,256M} repeat=${REPEAT:-3}

	echo "== the host's copy limit: memcpy on 1, 2, 4, 8 threads"
	"$bundle/dmabench" --device none -m memcpy,memcpy-mt1,memcpy-mt2,memcpy-mt4,memcpy-mt8 \
		-s "$sizes" -r "$repeat" --no-progress --plot none -o "$out/memcpy" \
		>"$out/memcpy.txt" 2>&1 || rc=1
	grep -A7 '^summary' "$out/memcpy.txt" || true

	modes=c2h,h2c
	for a in "${ALGOS[@]}"; do
		modes+=",$a,$a:i16f"
	done
	for p in ${PRESETS:-gen3x8 gen4x16}; do
		for t in ${THREADS:-1 4 8}; do
			echo "== emu:link=$p, $t copy thread(s)"
			"$bundle/dmabench" --device "emu:link=$p" -m "$modes" --copy-threads "$t" -s "$sizes" \
				-r "$repeat" --no-progress --plot none -o "$out/$p-t$t" >"$out/$p-t$t.txt" 2>&1 || rc=1
			efficiency_table "$out/$p-t$t.csv" | tee "$out/$p-t$t-efficiency.txt"
		done
	done
	# Conversions on the GPU stage: int16 -> float (board -> GPU) and float -> int16 (GPU ->
	# board) against the identity pipeline of the same run (--ref), by each path.
	local path dir
	for p in ${PRESETS:-gen3x8 gen4x16}; do
		for path in zero-copy kernel; do
			for dir in fi gi; do
				echo "== emu:link=$p, $dir-pb4Mx8:i16f ($path) against $dir-pb4Mx8"
				"$bundle/dmabench" --device "emu:link=$p,nt=0" -m "$dir-pb4Mx8,$dir-pb4Mx8:i16f" --ref "$dir-pb4Mx8" \
					--gpu-convert "$path" -s 64M,256M,1G -r "$repeat" --no-progress --plot none \
					-o "$out/conv-$p-$dir-$path" >"$out/conv-$p-$dir-$path.txt" 2>&1 || [[ $? = 3 ]] || rc=1
				sed -n '/^efficiency by size/,/^$/p' "$out/conv-$p-$dir-$path.txt"
			done
		done
	done

	# The pipelines against their references (min of the board's raw DMA on user memory and
	# the host link), and why GPU -> board lags board -> GPU at gen4x16: the same with the
	# board's H2C data going to the checker (the model reads every word, on the CPUs the GPU's
	# copy engine shares memory bandwidth with) and to the user logic (dropped unread).
	# Skipped (status 3) by a build without CUDA or a host without a GPU.
	local sink
	for p in ${PRESETS:-gen3x8 gen4x16}; do
		for sink in checker user; do
			echo "== emu:link=$p, board <-> GPU pipelines, H2C sink $sink"
			"$bundle/dmabench" --device "emu:link=$p,nt=0" --h2c-sink "$sink" \
				-m c2h-umem,h2c-umem,hg,gh,fi-db8M,fi-pb4Mx8,gi-db8M,gi-pb4Mx8 -s 1M,8M,64M,256M,1G \
				-r "$repeat" --no-progress --plot none -o "$out/pipe-$p-$sink" \
				>"$out/pipe-$p-$sink.txt" 2>&1 || [[ $? = 3 ]] || rc=1
			sed -n '/^efficiency by size/,/^$/p' "$out/pipe-$p-$sink.txt"
		done
	done
	return $rc
}

# mode x size table of the efficiency column of a dmabench CSV (mode,...,bytes,...,efficiency).
efficiency_table() {
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		 {
			m = $col["mode"]; b = $col["bytes"]; e = $col["efficiency"]
			if (!(m in seen)) { seen[m] = 1; order[++nm] = m }
			if (!(b in bseen)) { bseen[b] = 1; sizes[++nb] = b }
			eff[m, b] = e == "" ? "-" : sprintf("%.0f%%", 100 * e)
		 }
		 END {
			printf "%-22s", "mode"
			for (j = 1; j <= nb; j++) printf " %9s", (sizes[j] >= 1048576 ? sizes[j] / 1048576 "M" : sizes[j] / 1024 "K")
			printf "\n"
			for (i = 1; i <= nm; i++) {
				printf "%-22s", order[i]
				for (j = 1; j <= nb; j++) printf " %9s", ((order[i], sizes[j]) in eff ? eff[order[i], sizes[j]] : "")
				printf "\n"
			}
		 }' "$1"
}

case ${1:-} in
build) "$top/scripts/gpu-pipeline.sh" build "${2:?bundle directory}" ;;
run) run "${2:?bundle directory}" "${3:?output directory}" ;;
all)
	"$top/scripts/gpu-pipeline.sh" build "$top/build-bufmgr-speed/bundle"
	run "$top/build-bufmgr-speed/bundle" "${2:?output directory}"
	;;
*)
	sed -n '2,11s/^# \{0,1\}//p' "$0" >&2
	exit 2
	;;
esac
