// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The link timing model of the virtual board (docs/virtual-board.md, "Timing model").
 *
 * A transfer of bytes [from, to) of a descriptor at bus address `addr` costs
 *     (to - from) * ns_per_byte  +  (TLPs begun in that range) * ns_per_tlp
 * where TLPs are cut at MPS-aligned bus addresses (so none crosses a 4 KiB boundary).
 * For a preset, ns_per_byte = 1 / (lanes * lane rate after 8b/10b or 128b/130b encoding) and
 * ns_per_tlp = (TLP overhead bytes) * ns_per_byte (+ tlp=). The engine (emu_engine.c) adds the
 * per-descriptor latency and paces every transfer from its own start.
 */
#include <time.h>

#include "emu.h"

uint64_t emu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void emu_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

void emu_link_init(struct emu_link *link, const struct emu_config *cfg)
{
	unsigned int ch;

	for (ch = 0; ch < MP_CH_COUNT; ch++) {
		if (cfg->ideal) {
			link->ns_per_byte[ch] = 0;
			link->ns_per_tlp[ch] = cfg->tlp_ns;
		} else if (cfg->bw_Bps > 0) {
			link->ns_per_byte[ch] = 1e9 / cfg->bw_Bps;
			link->ns_per_tlp[ch] = cfg->tlp_ns;
		} else {
			link->ns_per_byte[ch] = 1e9 / cfg->raw_Bps;
			link->ns_per_tlp[ch] = cfg->ovh[ch] * link->ns_per_byte[ch] + cfg->tlp_ns;
		}
	}
	link->lat_ns = cfg->lat_ns;
	link->paced = link->lat_ns > 0;
	for (ch = 0; ch < MP_CH_COUNT; ch++)
		if (link->ns_per_byte[ch] > 0 || link->ns_per_tlp[ch] > 0)
			link->paced = true;
}

/* TLPs needed for the first k bytes of a transfer at addr. */
static uint64_t tlps(uint64_t addr, uint64_t k, uint32_t mps)
{
	return k ? (addr + k - 1) / mps - addr / mps + 1 : 0;
}

double emu_link_cost_ns(const struct emu_link *link, unsigned int ch, uint32_t mps,
			uint64_t addr, uint64_t from, uint64_t to)
{
	if (to <= from)
		return 0;
	return (double)(to - from) * link->ns_per_byte[ch] +
	       (double)(tlps(addr, to, mps) - tlps(addr, from, mps)) * link->ns_per_tlp[ch];
}

double emu_link_rate(const struct emu_link *link, unsigned int ch, uint32_t mps)
{
	double ns = mps * link->ns_per_byte[ch] + link->ns_per_tlp[ch];

	return ns > 0 ? mps * 1e9 / ns : 0;
}
