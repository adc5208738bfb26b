#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# net-bench.sh: the figures of docs/results/network.md, all in one run.
#
#   1. per transport (UCX_TLS) and chunk size: ucx_perftest's active-message bandwidth
#      (ucp_am_bw, its defaults: -O unlimited outstanding sends, -W 127) against the network
#      stage, the virtual board at gen3x8 -> dmabench net-pb<S>x8 -> mprace-recv (not checking,
#      as ucx_perftest does not; checking the pattern; and writing every chunk on to a second
#      virtual board at gen3x8, whose checker checks it: network -> board), and the board
#      alone (c2h-umem);
#      and, as references that do not sit in the cache, ucx_perftest with messages of the
#      transfer size and one thread's memcpy of that size;
#   2. 1 -> 2 -> 4 senders (each a dmabench process with its own virtual board) into 2
#      receivers, timeframes round-robin: the sum of the senders' rates;
#   3. with GPU=N, in part 1 also the receiver taking every chunk on into GPU N
#      (mprace-recv --gpu N: the copy engine reads the receiver's memory), not checking and
#      checking the pattern in GPU memory; with SCALE_GPUS="A B", part 2's two receivers
#      take their chunks on into GPUs A and B (checking there).
# Every process on the loopback of this machine. ucx_perftest prints MiB/s: converted to MB/s
# (10^6 bytes/s), dmabench's unit.
#
# Usage: scripts/net-bench.sh OUTDIR
# Environment: BUILD (the build tree, default ./build), TRANSPORTS (default "tcp shm,tcp"),
# CHUNKS (default "256K 1M 4M"), SENDERS (default "1 2 4"; empty: no part 2), SIZE (bytes per
# dmabench transfer, default 256M), ITERS (dmabench -n, default 8), UCX_PERFTEST (default: on
# PATH), GPU (default: none), DMABENCH and RECV (default: BUILD's tools).
set -eu
out=${1:?usage: net-bench.sh OUTDIR}
BUILD=${BUILD:-build}
TRANSPORTS=${TRANSPORTS:-"tcp shm,tcp"}
CHUNKS=${CHUNKS:-"256K 1M 4M"}
SENDERS=${SENDERS-"1 2 4"}
SIZE=${SIZE:-256M}
ITERS=${ITERS:-8}
PERFTEST=${UCX_PERFTEST:-ucx_perftest}
DMABENCH=${DMABENCH:-$BUILD/tools/dmabench}
RECV=${RECV:-$BUILD/tools/mprace-recv}
GPU=${GPU:-}
SCALE_GPUS=${SCALE_GPUS:-}
export PCIDRIVER_BACKEND_PATH=${PCIDRIVER_BACKEND_PATH:-$BUILD/vboard/.libs}
mkdir -p "$out"
pids=
trap 'rc=$?; for p in $pids; do kill -9 $p 2>/dev/null || true; done; exit $rc' EXIT

bytes_of() { # 256K -> 262144
	case $1 in
	*K) echo $(( ${1%K} * 1024 )) ;; *M) echo $(( ${1%M} * 1048576 )) ;; *) echo "$1" ;;
	esac
}
start_recv() { # FILE ARGS...: a receiver on a free port, its port in $port
	f=$1; shift
	rm -f "$out/port"
	"$RECV" -l 127.0.0.1:0 --port-file "$out/port" -q "$@" >"$f" 2>&1 &
	rpid=$!
	pids="$pids $rpid"
	for _ in $(seq 100); do [ -s "$out/port" ] && break; sleep 0.05; done
	port=$(cat "$out/port")
}
# dmabench's throughput (MB/s) of its one size from PREFIX.csv
rate_of() { awk -F, 'NR == 2 { print $7 }' "$1.csv"; }

echo "transport,chunk,what,MBps" >"$out/net-vs-perftest.csv"
n=0
for tls in $TRANSPORTS; do
	export UCX_TLS=$tls
	for chunk in $CHUNKS; do
		n=$((n + 1))
		b=$(bytes_of "$chunk")
		# ucx_perftest: as many messages as the stage sends in its runs, at least 2000
		iters=$(( $(bytes_of "$SIZE") * ITERS / b ))
		[ "$iters" -lt 2000 ] && iters=2000
		p=$((20000 + n))
		"$PERFTEST" -p $p >"$out/perftest-server.log" 2>&1 &
		spid=$!
		pids="$pids $spid"
		sleep 0.5
		# -f prints one line of figures: iterations, 3 latencies, bandwidth average, overall, ...
		mibs=$("$PERFTEST" 127.0.0.1 -p $p -t ucp_am_bw -s "$b" -n "$iters" -w 200 -f 2>&1 |
			awk 'NF >= 8 && $1 ~ /^[0-9]+$/ { v = $6 } END { print v }')
		wait $spid || true
		perf=$(awk -v m="$mibs" 'BEGIN { printf "%.1f", m * 1.048576 }')
		echo "\"$tls\",$chunk,ucx_perftest ucp_am_bw,$perf" >>"$out/net-vs-perftest.csv"
		for check in no-check check board ${GPU:+gpu-no-check gpu-check}; do
			start_recv "$out/recv-$n-$check.log" --senders 1 $(case $check in *no-check) echo --no-check ;; esac) \
				$(case $check in gpu-*) echo --gpu "$GPU" ;; board) echo --board emu:link=gen3x8 ;; esac)
			"$DMABENCH" -d emu:link=gen3x8 -m "net-pb${chunk}x8" --net-to "127.0.0.1:$port" -s "$SIZE" \
				-n "$ITERS" -r 3 --plot none --no-progress -o "$out/net-$n-$check" >"$out/net-$n-$check.log" 2>&1
			wait $rpid || { echo "receiver failed:"; cat "$out/recv-$n-$check.log"; exit 1; }
			echo "\"$tls\",$chunk,net-pb${chunk}x8 receiver $check,$(rate_of "$out/net-$n-$check")" >>"$out/net-vs-perftest.csv"
		done
	done
done
"$DMABENCH" -d emu:link=gen3x8 -m c2h-umem -s "$SIZE" -n "$ITERS" -r 3 --plot none --no-progress -o "$out/board" >"$out/board.log" 2>&1
echo "-,-,board alone c2h-umem,$(rate_of "$out/board")" >>"$out/net-vs-perftest.csv"
# What one thread copies when the data is not in its cache: the stage's chunks are 8 (or more)
# buffers the board has just written, ucx_perftest's one buffer is resident in the cache.
"$DMABENCH" -d none -m memcpy -s "$SIZE" -n "$ITERS" -r 3 --plot none --no-progress -o "$out/memcpy" >"$out/memcpy.log" 2>&1
echo "-,-,one thread's memcpy of $SIZE,$(rate_of "$out/memcpy")" >>"$out/net-vs-perftest.csv"
# ucx_perftest with messages of the transfer size: its buffer no longer fits in the cache
for tls in $TRANSPORTS; do
	export UCX_TLS=$tls
	n=$((n + 1))
	p=$((20000 + n))
	"$PERFTEST" -p $p >"$out/perftest-server.log" 2>&1 &
	spid=$!
	pids="$pids $spid"
	sleep 0.5
	mibs=$("$PERFTEST" 127.0.0.1 -p $p -t ucp_am_bw -s "$(bytes_of "$SIZE")" -n 40 -w 4 -f 2>&1 |
		awk 'NF >= 8 && $1 ~ /^[0-9]+$/ { v = $6 } END { print v }')
	wait $spid || true
	echo "\"$tls\",$SIZE,ucx_perftest ucp_am_bw,$(awk -v m="$mibs" 'BEGIN { printf "%.1f", m * 1.048576 }')" >>"$out/net-vs-perftest.csv"
done

# ---- scaling: N senders -> 2 receivers
echo "transport,senders,receivers,sum_of_sender_MBps,per_sender_MBps" >"$out/net-scaling.csv"
for tls in $TRANSPORTS; do
export UCX_TLS=$tls
for s in $SENDERS; do
	set -- $SCALE_GPUS
	start_recv "$out/scale-$tls-$s-r1.log" --senders "$s" ${1:+--gpu $1} $([ -n "${1:-}" ] || echo --no-check)
	p1=$port r1=$rpid
	start_recv "$out/scale-$tls-$s-r2.log" --senders "$s" ${2:+--gpu $2} $([ -n "${2:-}" ] || echo --no-check)
	p2=$port r2=$rpid
	spids=
	for k in $(seq "$s"); do
		"$DMABENCH" -d emu:link=gen3x8 -m net-pb1Mx8 --net-to "127.0.0.1:$p1,127.0.0.1:$p2" --net-source "$k" \
			-s "$SIZE" -n "$ITERS" -r 1 --plot none --no-progress -o "$out/scale-$tls-$s-$k" >"$out/scale-$tls-$s-$k.log" 2>&1 &
		spids="$spids $!"
	done
	for p in $spids; do wait "$p"; done
	wait $r1 && wait $r2 || { echo "a receiver failed"; cat "$out/scale-$tls-$s-r1.log" "$out/scale-$tls-$s-r2.log"; exit 1; }
	sum=0 rates=
	for k in $(seq "$s"); do
		r=$(rate_of "$out/scale-$tls-$s-$k")
		sum=$(awk -v a="$sum" -v b="$r" 'BEGIN { printf "%.1f", a + b }')
		rates="$rates${rates:+ }$r"
	done
	echo "\"$tls\",$s,2,$sum,$rates" >>"$out/net-scaling.csv"
done
done
cat "$out/net-vs-perftest.csv" "$out/net-scaling.csv"
