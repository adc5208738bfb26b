#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The network stage's tools end to end (TAP): mprace-recv's usage errors; dmabench's net modes
# into mprace-recv over TCP and shared memory, one and two senders, the pattern checked at the
# receiver; network -> board (mprace-recv --board: the board's checker judges every chunk); a
# refused connection; Ctrl-C on the receiver; and the same across two network
# namespaces joined by a veth pair (created and removed here; skipped with the reason where
# the machine forbids them). Built only with UCX (configure: the network stage).
. "${top_srcdir:-../..}/tests/tools/tools-tap.sh"
RECV=$top_builddir/tools/mprace-recv
NS_A=mprnet-a-$$
NS_B=mprnet-b-$$
recv_pid=
cleanup() {
	[ -n "$recv_pid" ] && kill -9 "$recv_pid" 2>/dev/null
	ip netns del "$NS_A" 2>/dev/null
	ip netns del "$NS_B" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT

# ---- usage
for bad in "" "--listen" "-l :1 --window 0" "-l :1 --window 2000" "-l :1 --max-chunk 0" \
	   "-l :1 --max-chunk 5G" "-l :1 --seed x" "-l :1 --duration -1" "-l :1 --bogus" "-l :1 extra" \
	   "-l :1 --gpu x" "-l :1 --gpu -1" "-l :1 --gpu 0 --gpu-depth 0" "-l :1 --gpu 0 --gpu-depth 257" \
	   "-l :1 --gpu-depth 4" "-l :1 --board" "-l :1 --board emu: --gpu 0"; do
	# shellcheck disable=SC2086  # word splitting wanted
	run "$RECV" $bad
	if [ $rc -eq 2 ] && grep -q '^Usage: mprace-recv' "$WORK/err"; then
		ok "mprace-recv bad usage '$bad': message and usage, status 2"
	else
		not_ok "mprace-recv bad usage '$bad' (rc=$rc)"; diag "$WORK/err"
	fi
done
run "$RECV" --listen nonsense
[ $rc -eq 2 ] && grep -q "bad address 'nonsense'" "$WORK/err" && ok "mprace-recv --listen nonsense: names it, status 2" ||
	{ not_ok "mprace-recv --listen nonsense (rc=$rc)"; diag "$WORK/err"; }

# a port file that cannot be written (under a plain file): the reason and status 2 at once,
# not a receiver running while a script waits for the file (--duration would end it with 0)
: >"$WORK/plain"
run "$RECV" -l 127.0.0.1:0 --port-file "$WORK/plain/port" --duration 2
[ $rc -eq 2 ] && grep -q "cannot write the port file $WORK/plain/port: Not a directory" "$WORK/err" &&
	[ ! -e "$WORK/plain/port.tmp" ] && ok "mprace-recv --port-file unwritable: the reason, status 2" ||
	{ not_ok "mprace-recv --port-file unwritable (rc=$rc)"; diag "$WORK/err"; }

# --gpu where no GPU can be used (no GPU here, none that high, or a build without CUDA): the
# reason and status 2 before anything is received
if [ -z "$(ls /dev/nvidia[0-9]* 2>/dev/null)" ]; then
	run "$RECV" -l 127.0.0.1:0 --gpu 0
	[ $rc -eq 2 ] && grep -q -- "--gpu 0: " "$WORK/err" && ok "mprace-recv --gpu 0 without a GPU: the reason, status 2" ||
		{ not_ok "mprace-recv --gpu 0 without a GPU (rc=$rc)"; diag "$WORK/err"; }
fi
run "$RECV" -l 127.0.0.1:0 --gpu 1023
[ $rc -eq 2 ] && grep -q -- "--gpu 1023: " "$WORK/err" && ok "mprace-recv --gpu 1023: the reason, status 2" ||
	{ not_ok "mprace-recv --gpu 1023 (rc=$rc)"; diag "$WORK/err"; }

# --board with a board that cannot be opened: the reason and status 2 before anything is
# received, and no port file (a script waiting for it would send to a receiver that is gone)
run "$RECV" -l 127.0.0.1:0 --board /dev/fpga-none --port-file "$WORK/bport" --duration 2
[ $rc -eq 2 ] && grep -q -- "--board /dev/fpga-none: " "$WORK/err" && [ ! -e "$WORK/bport" ] &&
	ok "mprace-recv --board with no such board: the reason, status 2, no port file" ||
	{ not_ok "mprace-recv --board /dev/fpga-none (rc=$rc)"; diag "$WORK/err"; }
run "$RECV" -l 127.0.0.1:0 --board emu:nosuchoption=1 --duration 2
[ $rc -eq 2 ] && grep -q -- "--board emu:nosuchoption=1: " "$WORK/err" && ok "mprace-recv --board with a bad emu: option: the reason, status 2" ||
	{ not_ok "mprace-recv --board emu:nosuchoption=1 (rc=$rc)"; diag "$WORK/err"; }

# start_recv [NETNS] ARGS...: a receiver in the background on a free port ($port, $recv_pid).
start_recv() {
	rm -f "$WORK/port"
	if [ "$1" = "-n" ]; then
		ns=$2; shift 2
		ip netns exec "$ns" "$RECV" --port-file "$WORK/port" -q "$@" >"$WORK/recv.out" 2>&1 &
	else
		"$RECV" --port-file "$WORK/port" -q "$@" >"$WORK/recv.out" 2>&1 &
	fi
	recv_pid=$!
	for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.05; done
	port=$(cat "$WORK/port" 2>/dev/null)
}
# wait_recv: the receiver's exit status in $recv_rc (killed after 60 s).
wait_recv() {
	for _ in $(seq 600); do kill -0 "$recv_pid" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$recv_pid" 2>/dev/null
	wait "$recv_pid"; recv_rc=$?
	recv_pid=
}
intact() { # N: the receiver's summary has N ended sources, no error counts
	[ "$(grep -c 'missing 0, duplicates 0, reordered 0, incomplete 0, pattern errors 0, ended$' "$WORK/recv.out")" = "$1" ]
}
NET_SWEEP="-s 64K:4M:4 -t 0.01 -r 1 --plot none --no-progress"

# ---- one sender, two transports
for tls in tcp shm,tcp; do
	export UCX_TLS=$tls
	start_recv -l 127.0.0.1:0 --senders 1 --seed 77
	# shellcheck disable=SC2086
	run "$DMABENCH" -d emu:link=gen3x8 -m net-pb256Kx4 --net-to "127.0.0.1:$port" --net-seed 77 $NET_SWEEP -o "$WORK/n1"
	wait_recv
	if [ $rc -eq 0 ] && [ $recv_rc -eq 0 ] && intact 1 && grep -q '^  net-pb256Kx4 ' "$WORK/out"; then
		ok "UCX_TLS=$tls: dmabench net-pb256Kx4 -> mprace-recv, every chunk the pattern, status 0"
	else
		not_ok "UCX_TLS=$tls: dmabench net -> mprace-recv (dmabench $rc, receiver $recv_rc)"
		diag "$WORK/err" "$WORK/recv.out"
	fi
done
export UCX_TLS=tcp

# A receiver with the wrong seed sees every chunk differ: the check can fail.
start_recv -l 127.0.0.1:0 --senders 1 --seed 78
# shellcheck disable=SC2086
run "$DMABENCH" -d emu: -m net --net-to "127.0.0.1:$port" --net-seed 77 -s 1M -n 2 -r 1 --plot none -o "$WORK/n2"
wait_recv
[ $recv_rc -eq 1 ] && grep -q 'differs from the pattern' "$WORK/recv.out" && ok "a receiver expecting another seed reports pattern errors, status 1" ||
	{ not_ok "wrong seed not detected (receiver $recv_rc)"; diag "$WORK/recv.out"; }

# ---- two senders (two virtual boards) into one receiver
start_recv -l 127.0.0.1:0 --senders 2
# shellcheck disable=SC2086
"$DMABENCH" -d emu: -m net --net-to "127.0.0.1:$port" --net-source 1 $NET_SWEEP -o "$WORK/s1" >"$WORK/s1.out" 2>&1 &
s1=$!
# shellcheck disable=SC2086
"$DMABENCH" -d emu: -m net --net-to "127.0.0.1:$port" --net-source 2 $NET_SWEEP -o "$WORK/s2" >"$WORK/s2.out" 2>&1
s2_rc=$?
wait $s1; s1_rc=$?
wait_recv
if [ $s1_rc -eq 0 ] && [ $s2_rc -eq 0 ] && [ $recv_rc -eq 0 ] && intact 2 && grep -q '^source 1:' "$WORK/recv.out" &&
	grep -q '^source 2:' "$WORK/recv.out"; then
	ok "two dmabench senders (sources 1, 2) -> one mprace-recv: both streams intact"
else
	not_ok "two senders -> one receiver (senders $s1_rc $s2_rc, receiver $recv_rc)"; diag "$WORK/recv.out" "$WORK/s1.out"
fi

# ---- network -> board: two senders into a receiver that writes every chunk on to its own
# virtual board, whose checker judges each chunk at its stream offset (the CPU checks nothing)
start_recv -l 127.0.0.1:0 --senders 2 --seed 9 --board emu:link=gen3x8
# shellcheck disable=SC2086
"$DMABENCH" -d emu: -m net-pb1Mx4 --net-to "127.0.0.1:$port" --net-source 1 --net-seed 9 $NET_SWEEP -o "$WORK/b1" >"$WORK/b1.out" 2>&1 &
s1=$!
# shellcheck disable=SC2086
"$DMABENCH" -d emu: -m net-pb64Kx8 --net-to "127.0.0.1:$port" --net-source 2 --net-seed 9 $NET_SWEEP -o "$WORK/b2" >"$WORK/b2.out" 2>&1
s2_rc=$?
wait $s1; s1_rc=$?
wait_recv
if [ $s1_rc -eq 0 ] && [ $s2_rc -eq 0 ] && [ $recv_rc -eq 0 ] && intact 2 && grep -q '(checked by the board)$' "$WORK/recv.out"; then
	ok "two senders -> mprace-recv --board emu: every chunk written on to the board and right by its checker"
else
	not_ok "network -> board (senders $s1_rc $s2_rc, receiver $recv_rc)"; diag "$WORK/recv.out" "$WORK/b1.out"
fi
# a slow board at the receiver (Gen1 x1: about 210 MB/s) stalls the sending board (Gen3 x8, 7.1
# GB/s) through the credits: the sender cannot outrun it, and nothing is lost
start_recv -l 127.0.0.1:0 --senders 1 --board emu:link=gen1x1
run "$DMABENCH" -d emu:link=gen3x8 -m net-pb256Kx8 --net-to "127.0.0.1:$port" -s 8M -n 2 -r 1 --plot none --no-progress -o "$WORK/b4"
wait_recv
rate=$(awk -F, 'NR == 2 { print int($7) }' "$WORK/b4.csv" 2>/dev/null)
[ $rc -eq 0 ] && [ $recv_rc -eq 0 ] && intact 1 && [ -n "$rate" ] && [ "$rate" -le 400 ] &&
	ok "a Gen1 x1 board at the receiver holds the Gen3 x8 sender to its rate ($rate MB/s), nothing lost" ||
	{ not_ok "slow receiving board (dmabench $rc at '$rate' MB/s, receiver $recv_rc)"; diag "$WORK/recv.out" "$WORK/out"; }
# a bus error on the receiving board (emu:buserr=h2c:3) ends the receiver with the engine's
# error and status 4, the summary printed; the sender then fails (its receiver is gone)
start_recv -l 127.0.0.1:0 --senders 1 --board emu:buserr=h2c:3
run "$DMABENCH" -d emu: -m net --net-to "127.0.0.1:$port" -s 1M -n 2 -r 1 --plot none --no-progress -o "$WORK/b5"
wait_recv
[ $recv_rc -eq 4 ] && grep -q "mprace-recv: the board emu:buserr=h2c:3: chunk 0 of source 0: .*BUS_ERROR" "$WORK/recv.out" &&
	grep -q '^total: ' "$WORK/recv.out" && ok "a bus error on the receiving board: the engine's error, the summary, status 4" ||
	{ not_ok "bus error on the receiving board (receiver $recv_rc, dmabench $rc)"; diag "$WORK/recv.out"; }
# the board's checker can fail: the receiver expects another seed than the sender's
start_recv -l 127.0.0.1:0 --senders 1 --seed 10 --board emu:
run "$DMABENCH" -d emu: -m net --net-to "127.0.0.1:$port" --net-seed 9 -s 1M -n 2 -r 1 --plot none -o "$WORK/b3"
wait_recv
[ $rc -eq 0 ] && [ $recv_rc -eq 1 ] && grep -q "the board's checker found \([0-9]*\) of \1 words differing from the pattern in chunks 0 to " "$WORK/recv.out" &&
	ok "mprace-recv --board expecting another seed: the board's checker reports every word, status 1" ||
	{ not_ok "wrong seed at the board not detected (dmabench $rc, receiver $recv_rc)"; diag "$WORK/recv.out"; }

# ---- a receiver killed under a sender and started again on its port: it takes it at once
# (the dead one's connections linger in TIME_WAIT; mprace-recv asks UCX for SO_REUSEADDR)
start_recv -l 127.0.0.1:0 --senders 1
"$DMABENCH" -d emu: -m net --net-to "127.0.0.1:$port" -s 16M -n 100000 -r 1 --plot none --no-progress \
	-o "$WORK/n4" >"$WORK/n4.out" 2>&1 &
sender=$!
sleep 0.5
kill -9 "$recv_pid"
wait_recv
wait $sender; sender_rc=$?
[ $sender_rc -eq 1 ] && grep -q "127.0.0.1:$port" "$WORK/n4.out" && ok "receiver killed under dmabench net: the sender fails naming it, status 1" ||
	{ not_ok "receiver killed under a sender (dmabench $sender_rc)"; diag "$WORK/n4.out"; }
old_port=$port
start_recv -l "127.0.0.1:$old_port" --senders 1
# shellcheck disable=SC2086
run "$DMABENCH" -d emu: -m net --net-to "127.0.0.1:$old_port" -s 1M -n 2 -r 1 --plot none -o "$WORK/n5"
wait_recv
[ "$port" = "$old_port" ] && [ $rc -eq 0 ] && [ $recv_rc -eq 0 ] && intact 1 &&
	ok "mprace-recv restarted on the port of a killed one: listens at once, the next sender intact" ||
	{ not_ok "restart on the same port (port $port, dmabench $rc, receiver $recv_rc)"; diag "$WORK/recv.out"; }

# ---- errors
run "$DMABENCH" -d emu: -m net -s 64K --plot none -o "$WORK/u1"
[ $rc -eq 3 ] && grep -q 'needs --net-to' "$WORK/out" "$WORK/err" && ok "net without --net-to: says so, status 3" ||
	{ not_ok "net without --net-to (rc=$rc)"; diag "$WORK/out" "$WORK/err"; }
for bad in net- net-x net-pb1M net-db0 net-pb4Kx1; do
	run "$DMABENCH" -d emu: -m "$bad" --net-to 127.0.0.1:9 --plot none -o "$WORK/u2"
	[ $rc -eq 2 ] && grep -q "^Usage: dmabench" "$WORK/err" && ok "mode '$bad': usage error" ||
		{ not_ok "mode '$bad' (rc=$rc)"; diag "$WORK/err"; }
done
for bad in "host" "host:0" "host:70000" "a:1,"; do
	run "$DMABENCH" -d emu: -m net --net-to "$bad" --plot none -o "$WORK/u3"
	[ $rc -eq 2 ] && grep -q -- "--net-to takes" "$WORK/err" && ok "--net-to '$bad': usage error" ||
		{ not_ok "--net-to '$bad' (rc=$rc)"; diag "$WORK/err"; }
done
start_recv -l 127.0.0.1:0 --duration 0.01
wait_recv	# its port is free again: nobody listens there
run "$DMABENCH" -d emu: -m net --net-to "127.0.0.1:$port" -s 64K --plot none -o "$WORK/n3"
[ $rc -eq 1 ] && grep -q "cannot connect to 127.0.0.1:$port" "$WORK/out" "$WORK/err" && ok "net to a port nobody listens on: 'cannot connect', status 1" ||
	{ not_ok "refused connection (rc=$rc)"; diag "$WORK/out" "$WORK/err"; }

# ---- Ctrl-C: the summary of what arrived, status 130
start_recv -l 127.0.0.1:0
sleep 0.2
kill -INT "$recv_pid"
wait_recv
[ $recv_rc -eq 130 ] && grep -q '^total: 0 chunks' "$WORK/recv.out" && ok "mprace-recv on SIGINT: summary, status 130" ||
	{ not_ok "SIGINT (rc=$recv_rc)"; diag "$WORK/recv.out"; }

# ---- across two network namespaces joined by a veth pair
if ! command -v ip >/dev/null 2>&1; then
	skip "two network namespaces over veth" "no ip command (iproute2)"
elif ! ip netns add "$NS_A" 2>"$WORK/ns.err"; then
	skip "two network namespaces over veth" "cannot create a network namespace here: $(head -n 1 "$WORK/ns.err")"
else
	ip netns add "$NS_B" &&
	ip link add "veth-a$$" netns "$NS_A" type veth peer name "veth-b$$" netns "$NS_B" &&
	ip -n "$NS_A" addr add 10.231.0.1/24 dev "veth-a$$" && ip -n "$NS_B" addr add 10.231.0.2/24 dev "veth-b$$" &&
	ip -n "$NS_A" link set "veth-a$$" up && ip -n "$NS_B" link set "veth-b$$" up &&
	ip -n "$NS_A" link set lo up && ip -n "$NS_B" link set lo up 2>"$WORK/ns.err"
	setup=$?
	# UCX lists the interfaces that are up when it starts: wait for both ends to be
	for _ in $(seq 100); do
		ip -n "$NS_A" link show "veth-a$$" | grep -q 'state UP' &&
			ip -n "$NS_B" link show "veth-b$$" | grep -q 'state UP' && break
		sleep 0.05
	done
	if [ $setup -ne 0 ]; then
		not_ok "setting up the veth pair"; diag "$WORK/ns.err"
	else
		start_recv -n "$NS_B" -l 10.231.0.2:0 --senders 1
		# shellcheck disable=SC2086
		run ip netns exec "$NS_A" "$DMABENCH" -d emu:link=gen3x8 -m net --net-to "10.231.0.2:$port" $NET_SWEEP -o "$WORK/ns"
		wait_recv
		if [ $rc -eq 0 ] && [ $recv_rc -eq 0 ] && intact 1; then
			ok "namespace A -> veth -> namespace B: dmabench net -> mprace-recv intact"
		else
			not_ok "across namespaces (dmabench $rc, receiver $recv_rc)"; diag "$WORK/err" "$WORK/recv.out"
		fi
		# From A, B's address is reachable but the loopback's receiver is not: refused, not hung.
		run ip netns exec "$NS_A" "$DMABENCH" -d emu: -m net --net-to "10.231.0.2:1" -s 64K --plot none -o "$WORK/ns2"
		[ $rc -eq 1 ] && grep -q "cannot connect" "$WORK/out" "$WORK/err" && ok "namespace A -> B's closed port: 'cannot connect', status 1" ||
			{ not_ok "closed port across namespaces (rc=$rc)"; diag "$WORK/out" "$WORK/err"; }
	fi
fi

done_testing
