#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The mprace CLI on the virtual board (TAP): outputs parsed and checked, data compared byte for
# byte, bad arguments -> usage message and status 2.
. "${top_srcdir:-../..}/tests/tools/tools-tap.sh"
M() { "$MPRACE" -d emu: "$@"; }

# ---- help and usage errors
run "$MPRACE" --help
[ $rc -eq 0 ] && grep -q '^Usage: mprace' "$WORK/out" && grep -q 'dma read' "$WORK/out" && ok "--help lists the commands" || not_ok "--help"
n=0
for c in "list" "info" "reg read" "reg write" "reg dump" "bar read" "bar write" "mem alloc" "mem free" "mem list" \
	 "dma read" "dma write" "dma loop" "irq status" "irq enable" "irq wait" "engine status" "engine reset" \
	 "engine abort" "test route" "test pattern" "test checker" "run"; do
	# shellcheck disable=SC2086
	run "$MPRACE" $c --help
	if [ $rc -eq 0 ] && grep -q "^Usage: mprace \[--device NAME\] $c" "$WORK/out"; then n=$((n + 1)); else echo "# no help for '$c' (rc=$rc)"; fi
done
[ $n -eq 23 ] && ok "--help for each of the 23 commands" || not_ok "--help for each command: $n of 23"
run "$MPRACE" reg --help
[ $rc -eq 0 ] && [ "$(grep -c '^Usage:' "$WORK/out")" -eq 3 ] && ok "'reg --help' shows the reg commands" || not_ok "reg --help"
usage_error() { # DESCRIPTION ARGS...: status 2, a message and a usage text on stderr, nothing on stdout
	d=$1; shift
	run "$MPRACE" -d emu: "$@"
	if [ $rc -eq 2 ] && grep -q '^mprace: ' "$WORK/err" && grep -q '^Usage: mprace' "$WORK/err" && [ ! -s "$WORK/out" ]; then
		ok "usage error: $d"
	else
		not_ok "usage error: $d (rc=$rc)"; diag "$WORK/err"
	fi
}
run "$MPRACE"
[ $rc -eq 2 ] && grep -q 'no command' "$WORK/err" && ok "usage error: no command" || not_ok "no command (rc=$rc)"
usage_error "unknown option" --bogus info
usage_error "unknown command" frobnicate
usage_error "incomplete command" reg
usage_error "unknown register name" reg read NO_SUCH_REG
usage_error "unaligned register offset" reg read 0x15
usage_error "register offset past BAR0" reg read 0x1000
usage_error "missing value" reg write SCRATCH
usage_error "bad value" reg write SCRATCH 12q
usage_error "extra argument" reg write SCRATCH 1 2
usage_error "unknown command option" reg dump --all
usage_error "dma size not a multiple of 4" dma read 6
usage_error "dma write without data" dma write
usage_error "bad --source" dma read 4K --source nowhere
usage_error "bad channel" engine abort x2y
usage_error "bad irq source" irq enable c2h,bogus
usage_error "missing option value" dma read 4K -o
# In a sequence the commands before the bad one have run (as in a script).
run M reg read SCRATCH \; reg write SCRATCH
[ $rc -eq 2 ] && grep -q '^Usage: mprace \[--device NAME\] reg write' "$WORK/err" && grep -q '^SCRATCH' "$WORK/out" &&
	ok "usage error inside a ';' sequence: the command's usage, status 2" || { not_ok "usage error in a sequence (rc=$rc)"; diag "$WORK/err"; }

# ---- identification and registers
run M info
grep -q '^backend: emu' "$WORK/out" && grep -q '^magic: 0x4d505243 (our engine)' "$WORK/out" &&
	grep -q '^version: 1\.0' "$WORK/out" && grep -q '^bar0: 4 KiB' "$WORK/out" &&
	grep -q '^ids: vendor 0x10ee device 0x7038' "$WORK/out" && grep -q 'pattern generator, checker, loopback' "$WORK/out" &&
	ok "info: backend, MAGIC, version, BAR0, IDs, capabilities" || { not_ok "info"; diag "$WORK/out"; }
run "$MPRACE" list
[ $rc -eq 0 ] && grep -qx 'emu:' "$WORK/out" && ok "list names the virtual board" || not_ok "list"
run "$MPRACE" -q -d emu: reg read MAGIC
[ "$(cat "$WORK/out")" = "0x4d505243" ] && ok "MAGIC by name" || not_ok "MAGIC by name: $(cat "$WORK/out")"
run M reg read 0x0 magic version
[ "$(sed -n 1p "$WORK/out")" = "MAGIC (0x000) = 0x4d505243" ] && [ "$(sed -n 2p "$WORK/out")" = "MAGIC (0x000) = 0x4d505243" ] &&
	[ "$(sed -n 3p "$WORK/out")" = "VERSION (0x004) = 0x00010000" ] && ok "registers by offset and by name (case-insensitive)" ||
	{ not_ok "reg read by offset/name"; diag "$WORK/out"; }
run M reg write SCRATCH 0xcafe1234 \; reg read SCRATCH \; reg write 0x14 7 \; reg read scratch
[ "$(sed -n 2p "$WORK/out")" = "SCRATCH (0x014) = 0xcafe1234" ] && [ "$(sed -n 4p "$WORK/out")" = "SCRATCH (0x014) = 0x00000007" ] &&
	ok "SCRATCH written and read back in one invocation" || { not_ok "SCRATCH write/read"; diag "$WORK/out"; }
run "$MPRACE" -q -d emu: reg read SCRATCH
[ "$(cat "$WORK/out")" = "0x00000000" ] && ok "a new invocation on emu: is a fresh board (SCRATCH 0)" || not_ok "fresh board: $(cat "$WORK/out")"
run M reg write MAGIC 1
[ $rc -eq 0 ] && grep -q 'read-only' "$WORK/err" && ok "writing a read-only register: a note" || not_ok "ro note"
run M reg dump
[ "$(wc -l <"$WORK/out")" -eq 36 ] && grep -Eq '^0x000 MAGIC +ro +0x4d505243$' "$WORK/out" &&
	grep -Eq '^0x114 C2H_TAIL +rw +0x00000000$' "$WORK/out" && ok "reg dump: all 36 named registers" ||
	{ not_ok "reg dump"; diag "$WORK/out"; }

# ---- BARs
run M bar write 2 0x100 0x11223344 0x55667788 \; bar read 2 0x100 8
grep -q '^00000100: 11223344 55667788$' "$WORK/out" && ok "BAR2 words written and read back" || { not_ok "bar words"; diag "$WORK/out" "$WORK/err"; }
head -c 65536 /dev/urandom >"$WORK/rand64k"
run M bar write 2 0x1000 -i "$WORK/rand64k" \; bar read 2 0x1000 64K -o "$WORK/bar.bin"
cmp -s "$WORK/rand64k" "$WORK/bar.bin" && ok "BAR2: 64 KiB file in, the same bytes out" || { not_ok "bar file round trip"; diag "$WORK/err"; }
usage_error "bar read beyond the BARs" bar read 9 0 4
run M bar read 2 0x3fffffc 8
[ $rc -eq 1 ] && grep -q '8 bytes at 0x3fffffc lie outside BAR 2 (67108864 bytes)' "$WORK/err" &&
	ok "bar read past the end of BAR2: status 1, the BAR's size in the message" ||
	{ not_ok "bar read past end (rc=$rc)"; diag "$WORK/err"; }
run M bar write 2 0xfffffffc 1 2
[ $rc -eq 1 ] && grep -q 'lie outside BAR 2' "$WORK/err" && ok "bar write past the end of BAR2: status 1, said so" ||
	{ not_ok "bar write past end (rc=$rc)"; diag "$WORK/err"; }
run M bar read 1 0 4
[ $rc -eq 1 ] && grep -q 'BAR 1 is not present' "$WORK/err" && ok "bar read of an absent BAR: status 1, said so" ||
	{ not_ok "bar read absent BAR (rc=$rc)"; diag "$WORK/err"; }

# ---- DMA
# od prints the words of a file; seq the counter pattern: compared word for word.
words() { od -An -v -t u4 "$1" | tr -s ' ' '\n' | sed '/^$/d'; }
run M dma read 64K -o "$WORK/pat.bin" --seed 100 --verify
words "$WORK/pat.bin" >"$WORK/pat.txt"
seq 100 16483 >"$WORK/want.txt"
[ $rc -eq 0 ] && [ "$(wc -c <"$WORK/pat.bin")" -eq 65536 ] && cmp -s "$WORK/pat.txt" "$WORK/want.txt" &&
	grep -q '^verify: ok' "$WORK/out" && ok "dma read 64K: the counter pattern from seed 100, word for word" ||
	{ not_ok "dma read pattern (rc=$rc)"; diag "$WORK/err"; }
run M dma read 1M --umem -o "$WORK/pat1m.bin"
words "$WORK/pat1m.bin" >"$WORK/pat1m.txt"
seq 0 262143 >"$WORK/want1m.txt"
[ $rc -eq 0 ] && cmp -s "$WORK/pat1m.txt" "$WORK/want1m.txt" && grep -q 'into user memory' "$WORK/out" &&
	ok "dma read 1M into user memory (scatter-gather): the pattern from 0" || { not_ok "dma read umem (rc=$rc)"; diag "$WORK/err"; }
# -o to a path that cannot be written (under a plain file): the reason before any transfer,
# status 1, no line saying what moved (the data would have been lost)
: >"$WORK/plain"
for c in "dma read 4K" "dma loop --pattern 4K" "bar read 2 0 64"; do
	# shellcheck disable=SC2086
	run M $c -o "$WORK/plain/x"
	[ $rc -eq 1 ] && grep -q "cannot write $WORK/plain/x: Not a directory" "$WORK/err" && [ ! -s "$WORK/out" ] &&
		ok "$c -o unwritable: fails before the transfer" || { not_ok "$c -o unwritable (rc=$rc)"; diag "$WORK/out"; }
done
run M dma read 16 --seed 0xfffffffe
grep -q '^00000000: fffffffe ffffffff 00000000 00000001$' "$WORK/out" && ok "dma read as hex, pattern wraps at 2^32" || { not_ok "dma read hex"; diag "$WORK/out"; }
run M dma write --pattern 64K --seed 7 --verify
grep -q '^checker: 16384 words, 0 errors (seed 0x00000007)$' "$WORK/out" && [ $rc -eq 0 ] &&
	ok "dma write --pattern: the checker counts 16384 words, 0 errors" || { not_ok "dma write pattern"; diag "$WORK/out" "$WORK/err"; }
run M dma write -i "$WORK/pat.bin" --seed 100 --verify --umem
grep -q '^checker: 16384 words, 0 errors' "$WORK/out" && [ $rc -eq 0 ] && ok "dma write of the file read before: the checker agrees" ||
	{ not_ok "dma write file"; diag "$WORK/out" "$WORK/err"; }
run M dma write -i "$WORK/pat.bin" --seed 101 --verify
[ $rc -eq 1 ] && grep -q '^checker: 16384 words, 16384 errors' "$WORK/out" && ok "dma write with the wrong seed: 16384 errors, status 1" ||
	{ not_ok "checker mismatch (rc=$rc)"; diag "$WORK/out"; }
head -c 1048576 /dev/urandom >"$WORK/rand1m"
run M dma loop -i "$WORK/rand1m" -o "$WORK/loop.bin"
[ $rc -eq 0 ] && cmp -s "$WORK/rand1m" "$WORK/loop.bin" && ok "dma loop: 1 MiB of random bytes back unchanged" || { not_ok "dma loop (rc=$rc)"; diag "$WORK/err"; }
run M dma read 64K --irq -o "$WORK/irq.bin" --verify
[ $rc -eq 0 ] && ok "dma read completed by interrupt" || { not_ok "dma read --irq (rc=$rc)"; diag "$WORK/err"; }
run M dma read 4K --source user --timeout 200
[ $rc -eq 1 ] && grep -qi 'tim' "$WORK/err" && ok "C2H from the (absent) user stream times out: status 1" || { not_ok "timeout (rc=$rc)"; diag "$WORK/err"; }

# ---- several steps in one invocation: held buffers, a script
cat >"$WORK/script" <<SCRIPT
# a buffer that lives across commands
mem alloc umem 256K
mem alloc kmem 64K
dma read 256K --buffer 1 --seed 5 -o $WORK/s.bin
mem list
mem free 2
engine status
SCRIPT
run M run "$WORK/script"
words "$WORK/s.bin" >"$WORK/s.txt"
seq 5 65540 >"$WORK/want5.txt"
[ $rc -eq 0 ] && cmp -s "$WORK/s.txt" "$WORK/want5.txt" && grep -Eq '^1 +user memory +256 KiB' "$WORK/out" &&
	grep -Eq '^2 +kernel memory +64 KiB +1 ' "$WORK/out" && grep -q '^buffer 2 freed' "$WORK/out" &&
	grep -q '^C2H: state RUNNING.*bytes 262144$' "$WORK/out" && ok "run script: held buffers, dma read into one, mem list, engine status" ||
	{ not_ok "run script (rc=$rc)"; diag "$WORK/out" "$WORK/err"; }
# Numbers past 32 bits are refused, not cut down to another buffer's id, BAR or timeout.
run M mem alloc kmem 4K \; mem free 4294967297
[ $rc -eq 2 ] && grep -q "32 bits" "$WORK/err" && ! grep -q "freed" "$WORK/out" &&
	ok "mem free 2^32 + 1: usage error, buffer 1 not freed" || { not_ok "mem free 2^32 + 1 (rc=$rc)"; diag "$WORK/out" "$WORK/err"; }
usage_error "bar read 2^32 + 2 (not BAR 2)" bar read 4294967298 0 4
usage_error "dma read --buffer 2^32 + 1" dma read 4K --buffer 4294967297
usage_error "irq wait --timeout past 32 bits" irq wait c2h --timeout 4294967296
printf 'reg write SCRATCH 9\nreg read SCRATCH\nreg read NOPE\nreg read SCRATCH\n' >"$WORK/bad"
run M run "$WORK/bad"
[ $rc -eq 2 ] && grep -q "bad:3: unknown register" "$WORK/err" && [ "$(grep -c SCRATCH "$WORK/out")" -eq 2 ] &&
	ok "run script stops at the bad line and names it" || { not_ok "run script error (rc=$rc)"; diag "$WORK/err"; }
printf 'reg read MAGIC\n' | "$MPRACE" -d emu: run - >"$WORK/out" 2>&1
grep -q 'MAGIC (0x000) = 0x4d505243' "$WORK/out" && ok "run - reads the script from stdin" || not_ok "run -"

# ---- interrupts, abort and recovery, test logic
run M irq enable error \; engine abort c2h \; irq wait error --timeout 2000 --ack \; engine status \; engine reset c2h \; engine status \; irq status
grep -q '^irq: vector 2, 1 event(s)' "$WORK/out" && grep -q '^C2H: state ERROR, error 7 (ABORTED)' "$WORK/out" &&
	grep -q '^C2H: state IDLE, error 0 (NONE)' "$WORK/out" && grep -q '^error: idle, enabled, vector 2' "$WORK/out" &&
	ok "abort -> ERROR/ABORTED and an error interrupt on vector 2; channel reset -> IDLE" || { not_ok "irq/abort/reset (rc=$rc)"; diag "$WORK/out" "$WORK/err"; }
usage_error "irq wait on a vector the board does not have" irq wait 99
grep -q 'vector 99: the board has 4 (0 to 3)' "$WORK/err" && ok "irq wait 99: says how many vectors there are" ||
	{ not_ok "irq wait 99 message"; diag "$WORK/err"; }
run M irq wait c2h --timeout 50
[ $rc -eq 1 ] && grep -q 'no interrupt' "$WORK/err" && ok "irq wait times out: status 1" || not_ok "irq wait timeout (rc=$rc)"
run M test route --source loopback --sink checker \; test pattern --seed 0x42 --rate 100 \; test checker --reset 3 \; engine reset \; test route
grep -q '^c2h source: loopback$' "$WORK/out" && grep -q '^h2c sink: checker$' "$WORK/out" && grep -q '^PATGEN_SEED = 0x00000042$' "$WORK/out" &&
	grep -q '^PATGEN_RATE = 100 MB/s$' "$WORK/out" && grep -q '^CHECK_WORDS = 0$' "$WORK/out" && [ "$(tail -n 2 "$WORK/out" | head -n 1)" = "c2h source: user" ] &&
	ok "test route/pattern/checker set and shown; engine reset restores the routing" || { not_ok "test logic"; diag "$WORK/out" "$WORK/err"; }

# ---- errors from the libraries are said once, with the tool's name once
run "$MPRACE" -d emu:buserr=c2h dma read 4K
if [ $rc -eq 1 ] && grep -q '^mprace: C2H transfer of 4096 bytes failed with engine error BUS_ERROR' "$WORK/err" &&
   ! grep -q 'mprace: mprace' "$WORK/err"; then
	ok "a DMA error: one line, 'mprace: ' once"
else
	not_ok "DMA error message (rc=$rc)"; diag "$WORK/err"
fi
run "$MPRACE" -d /dev/fpga97 info
if [ $rc -ne 0 ] && grep -q 'fpga97' "$WORK/err" && grep -q 'pcidriver.ko' "$WORK/err" &&
   [ "$(grep -o 'No such device' "$WORK/err" | wc -l)" -eq 1 ]; then
	ok "a missing board: named, with what to do, the errno text once"
else
	not_ok "missing board message (rc=$rc)"; diag "$WORK/err"
fi

run "$MPRACE" -d emu: mem alloc kmem 512M
if [ $rc -eq 1 ] && grep -q '256 MiB' "$WORK/err" && grep -q 'user memory' "$WORK/err"; then
	ok "kmem above the limit: the limit and the way out are named"
else
	not_ok "kmem limit message (rc=$rc)"; diag "$WORK/err"
fi

done_testing
