// SPDX-License-Identifier: GPL-2.0-or-later
//
// The command table of the mprace tool (name, synopsis, help, handler, options) and the
// splitting of script lines into words. The handlers live by group in cmd_board.cpp,
// cmd_mem.cpp and cmd_dma.cpp.
#include <cstdio>
#include <string>
#include <vector>

#include "cli.hpp"
#include "cli_util.hpp"


namespace cli {

void script_runner(Session &s, const Args &a); // main.cpp

const std::vector<Command> &commands()
{
	static const std::vector<Command> t = {
		{"list", "", "list the boards: device node, PCI address, link, NUMA node, IOMMU group, engine",
		 "Kernel devices (/dev/fpgaN) first, then the backends (emu:, sim:). Each board's name is\n"
		 "on a line of its own, usable with --device; indented lines below it say where it sits:\n"
		 "PCI address, IDs and bound driver; the link as trained against what the board and the\n"
		 "port above it can do; NUMA node and IOMMU group (with its domain type); MPS and MRRS in\n"
		 "effect; the engine's version and datapath (or that the device is not our engine). The\n"
		 "virtual board says what it models; sim: is not opened (that starts a simulator).\n"
		 "With -q only the names.\n",
		 cmd_list, {}, {}},
		{"doctor", "[DEVICE] [--buffers SIZE] [--json]", "check the platform for what keeps a board from its link rate",
		 "Checks, each with its evidence and a one-line fix: the device node's permissions; the\n"
		 "module's API; our engine; the link as trained against what both ends of every link up to\n"
		 "the root can do; MPS/MRRS against what the path supports (ports' config space needs root);\n"
		 "the board's NUMA node against the CPUs this process may use; the IOMMU's mode;\n"
		 "RLIMIT_MEMLOCK against --buffers SIZE of DMA buffers (default 64M); huge pages; NVIDIA\n"
		 "GPUs: driver (dma-buf export), whether board and GPU share a switch or root port, ACS.\n"
		 "DEVICE defaults to --device, $PCIDRIVER_DEVICE, /dev/fpga0; with none, 'no board' is\n"
		 "a finding. Levels: ok, note, warning, serious, skipped. --json prints one object\n"
		 "{device, warnings, serious, checks: [{check, level, summary, evidence, fix}]}.\n"
		 "Exit status 1 when a serious finding was made, else 0. docs/bring-up.md explains each.\n",
		 cmd_doctor, {"--buffers"}, {"--json"}},
		{"selftest", "[--short|--long] [--seed N] [--report FILE]", "run the engine conformance suite on the board",
		 "The checks of docs/dma-engine.md through libmprace: identity, SCRATCH, the pattern\n"
		 "generator into kernel and user memory, the checker, every descriptor error, abort, the\n"
		 "stall timeout, both channels at once through the loopback (polling and interrupts). The\n"
		 "board's engine is reset and used; nothing else may use it meanwhile. --short (default,\n"
		 "seconds) or --long (more and longer transfers). On sim: transfers are sized for the\n"
		 "simulator (also with --slow). TAP on stdout after a header naming tool, host, device, link\n"
		 "and engine: attach it (or --report FILE, the same text) to a bug report; --seed N repeats\n"
		 "a run. A device without our engine is refused before anything runs. Exit status 1 when a\n"
		 "check failed.\n",
		 cmd_selftest, {"--seed", "--report"}, {"--short", "--long", "--slow"}},
		{"info", "", "identify the board: PCI IDs, BARs, interrupts, engine version and capabilities",
		 "Lines are 'key: value'.\n", cmd_info, {}, {}},
		{"reg read", "REG...", "read 32-bit registers of BAR0 by name or offset",
		 "REG is a name from the engine spec (SCRATCH, C2H_HEAD, ...; case-insensitive) or a byte\n"
		 "offset (0x14). Prints 'NAME (0xOFF) = 0xVALUE' (with -q just the value).\n",
		 cmd_reg_read, {}, {}},
		{"reg write", "REG VALUE", "write a 32-bit register of BAR0",
		 "REG as for 'reg read'; VALUE decimal or 0x hex. Writes to read-only registers are\n"
		 "ignored by the engine (a note says so).\n",
		 cmd_reg_write, {}, {}},
		{"reg dump", "", "read every named register", "Columns: offset, name, access (ro/rw/rsc/w1c), value.\n",
		 cmd_reg_dump, {}, {}},
		{"bar read", "BAR OFFSET LENGTH [-o FILE]", "read a BAR range (32-bit accesses) to a file or as hex",
		 "Without -o the data is printed as 32-bit hex words; '-o -' writes raw bytes to stdout.\n"
		 "OFFSET and LENGTH are multiples of 4; LENGTH takes K/M suffixes.\n",
		 cmd_bar_read, {"-o"}, {}},
		{"bar write", "BAR OFFSET (-i FILE | WORD...)", "write a file or 32-bit words into a BAR",
		 "-i - reads standard input. The length must be a multiple of 4.\n", cmd_bar_write, {"-i"}, {}},
		{"mem alloc", "kmem|umem SIZE", "allocate a DMA buffer held until the invocation ends",
		 "kmem: driver-allocated kernel memory (one bus address); umem: anonymous memory of this\n"
		 "process pinned by the driver (scatter-gather). Prints its id for --buffer and 'mem free'.\n"
		 "Useful in one invocation with several commands (';' or 'run').\n",
		 cmd_mem_alloc, {}, {}},
		{"mem free", "ID", "free a buffer of 'mem alloc'", "", cmd_mem_free, {}, {}},
		{"mem list", "", "list the DMA buffers this invocation holds",
		 "Shows id, kind, size and bus-address segments of the buffers allocated by 'mem alloc'\n"
		 "earlier in the same invocation. Buffers of other processes are not visible through\n"
		 "libpcidriver; on the kernel backend the line 'driver (...)' gives the driver's sysfs\n"
		 "counters of the device (kmem_count, kmem_bytes, umem_count, umem_pinned_bytes) over\n"
		 "all processes.\n",
		 cmd_mem_list, {}, {}},
		{"dma read", "SIZE [-o FILE] [options]", "C2H: DMA SIZE bytes from the board into host memory",
		 "Options:\n"
		 "  -o FILE          write the data to FILE ('-' raw to stdout); default: hex on stdout\n"
		 "  --source S       pattern (default: the pattern generator, seed --seed), loopback,\n"
		 "                   user (the user logic's stream) or keep (TEST_CONTROL as it is)\n"
		 "  --seed N         the pattern generator's first word (default 0)\n"
		 "  --verify         check the data against the counter pattern; exit 1 on a mismatch\n"
		 "  --umem           user memory instead of kernel memory;  --buffer ID  a 'mem alloc' buffer\n"
		 "  --irq            complete by interrupt instead of polling\n"
		 "  --timeout MS     give up (abort) after MS milliseconds (default 10000; on sim:,\n"
		 "                   where DMA is slow, the engine waits 60 times longer)\n",
		 cmd_dma_read, {"-o", "--source", "--seed", "--buffer", "--timeout"}, {"--verify", "--umem", "--irq"}},
		{"dma write", "(-i FILE | --pattern SIZE) [options]", "H2C: DMA a file or the counter pattern to the board",
		 "Options:\n"
		 "  -i FILE          the data ('-': stdin); its length must be a multiple of 4\n"
		 "  --pattern SIZE   send SIZE bytes of the counter pattern from --seed instead\n"
		 "  --sink S         checker (default: compares with CHECK_SEED + n, reset to --seed),\n"
		 "                   loopback, user or keep\n"
		 "  --seed N         the checker's (and --pattern's) first word (default 0)\n"
		 "  --verify         exit 1 unless the checker counted every word and no error\n"
		 "  --eop            end of packet (tlast) on the last beat\n"
		 "  --umem, --buffer ID, --irq, --timeout MS   as for 'dma read'\n"
		 "Prints the checker's counts when the sink is the checker.\n",
		 cmd_dma_write, {"-i", "--pattern", "--sink", "--seed", "--buffer", "--timeout"},
		 {"--verify", "--umem", "--irq", "--eop"}},
		{"dma loop", "(-i FILE | --pattern SIZE) [-o FILE]", "H2C through the engine's loopback back by C2H, compared",
		 "Routes TEST_CONTROL to loopback both ways, writes the data and reads it back at the same\n"
		 "time, writes what came back to -o FILE, and exits 1 if it differs.\n",
		 cmd_dma_loop, {"-i", "-o", "--pattern", "--seed", "--timeout"}, {"--irq"}},
		{"irq status", "", "show IRQ_STATUS and IRQ_ENABLE per source", "", cmd_irq_status, {}, {}},
		{"irq enable", "SOURCES", "set IRQ_ENABLE: c2h,h2c,error, all or none", "", cmd_irq_enable, {}, {}},
		{"irq wait", "SOURCE [--timeout MS] [--ack]", "wait for an interrupt (c2h, h2c, error or a vector number)",
		 "Waits through the driver's interrupt wait (pd_irq_wait) for the source's vector (its own\n"
		 "with >= 4 MSI vectors, else vector 0); exit 1 after --timeout ms (default 1000).\n"
		 "--ack clears the source's IRQ_STATUS bit afterwards.\n",
		 cmd_irq_wait, {"--timeout"}, {"--ack"}},
		{"engine status", "", "channel states, errors, ring pointers, byte counters, test routing",
		 "Reads the registers only; it does not take or reset the engine.\n", cmd_engine_status, {}, {}},
		{"engine reset", "[all|c2h|h2c]", "global reset (default) or one channel's reset",
		 "all: CONTROL.RESET (both channels, test logic, IRQ_STATUS/ENABLE, SCRATCH).\n"
		 "c2h/h2c: the channel's CONTROL.RESET (clears ERROR, HEAD = TAIL = 0).\n",
		 cmd_engine_reset, {}, {}},
		{"engine abort", "c2h|h2c", "abort a channel (it enters ERROR with ABORTED)", "", cmd_engine_abort, {}, {}},
		{"test route", "[--source S] [--sink K]", "show or set TEST_CONTROL",
		 "S: user, pattern or loopback; K: user, checker or loopback. Both channels must be idle.\n",
		 cmd_test_route, {"--source", "--sink"}, {}},
		{"test pattern", "[--seed N] [--rate MBPS]", "show or set the pattern generator",
		 "--rate limits the generator to MBPS MB/s (0: unlimited).\n", cmd_test_pattern, {"--seed", "--rate"}, {}},
		{"test checker", "[--reset SEED]", "show (or reset to SEED) the checker's word and error counts", "",
		 cmd_test_checker, {"--reset"}, {}},
		{"run", "FILE|-", "run the commands of a script on one board, one per line",
		 "Each line is a command as after 'mprace' ('#' starts a comment, quotes group words).\n"
		 "The script stops at the first failing line (its number is reported). All lines act on\n"
		 "the same open board, which matters for the virtual board: it lives only as long as\n"
		 "this process.\n",
		 script_runner, {}, {}},
	};
	return t;
}

std::vector<std::string> split_words(const std::string &line)
{
	std::vector<std::string> out;
	std::string cur;
	bool in = false;
	char quote = 0;
	for (char c : line) {
		if (quote) {
			if (c == quote)
				quote = 0;
			else
				cur += c;
			continue;
		}
		if (c == '#')
			break;
		if (c == '\'' || c == '"') {
			quote = c;
			in = true;
		} else if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
			if (in)
				out.push_back(cur);
			cur.clear();
			in = false;
		} else {
			cur += c;
			in = true;
		}
	}
	if (in)
		out.push_back(cur);
	return out;
}

} // namespace cli
