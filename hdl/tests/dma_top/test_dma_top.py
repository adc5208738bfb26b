"""Dev tests (temporary)."""
import cocotb
from cocotb.triggers import Timer
import hdl_runner
from mprace_tb import TB, S, Ring, C2H, H2C, pattern_bytes


@cocotb.test()
async def c2h_basic(dut):
    tb = TB(dut)
    await tb.init()
    ring = Ring(tb, C2H, 16)
    await ring.configure()
    await tb.wr("TEST_CONTROL", S.val("TEST_CONTROL", C2H_SOURCE=1))
    await tb.wr("PATGEN_SEED", 0x1000)
    sizes = [64, 4, 1000, 4096 + 36]
    bufs = []
    for n in sizes:
        a, o = tb.alloc(n + 64, offset=12)
        bufs.append((a, o, n))
    await ring.submit([(a, n, S.ctrl()) for a, o, n in bufs])
    await tb.ch_control(C2H, run=1)
    await ring.wait_done(len(sizes) - 1, timeout_us=100)
    word = 0x1000
    for k, (a, o, n) in enumerate(bufs):
        got = bytes(tb.mem[o:o + n])
        exp = pattern_bytes(word, n // 4)
        word += n // 4
        assert got == exp, f"desc {k}: data mismatch"
        rb, st = ring.result(k)
        tb.log.info("desc %d: bytes %d status %#x", k, rb, st)
        assert rb == n and st == 1
    head = await tb.ch_rd(C2H, "HEAD")
    assert head == len(sizes)
    tb.check_protocol()


@cocotb.test()
async def h2c_basic(dut):
    tb = TB(dut)
    await tb.init()
    ring = Ring(tb, H2C, 16)
    await ring.configure()
    await tb.wr("TEST_CONTROL", S.val("TEST_CONTROL", H2C_SINK=1))
    await tb.wr("CHECK_SEED", 0x2000)
    sizes = [64, 4, 1000, 4096 + 36]
    bufs = []
    word = 0x2000
    for n in sizes:
        a, o = tb.alloc(n + 64, offset=20)
        tb.mem[o:o + n] = pattern_bytes(word, n // 4)
        word += n // 4
        bufs.append((a, o, n))
    await ring.submit([(a, n, S.ctrl()) for a, o, n in bufs])
    await tb.ch_control(H2C, run=1)
    await ring.wait_done(len(sizes) - 1, timeout_us=100)
    for k in range(len(sizes)):
        rb, st = ring.result(k)
        tb.log.info("desc %d: bytes %d status %#x", k, rb, st)
        assert rb == sizes[k] and st == 1
    words = await tb.rd("CHECK_WORDS")
    errors = await tb.rd("CHECK_ERRORS")
    tb.log.info("checker: %d words, %d errors", words, errors)
    assert words == sum(sizes) // 4 and errors == 0
    tb.check_protocol()


def test_c2h_basic():
    hdl_runner.run("mprace_dma_top", "test_dma_top", "c2h_basic", "c2h_basic")


def test_h2c_basic():
    hdl_runner.run("mprace_dma_top", "test_dma_top", "h2c_basic", "h2c_basic")
