// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The link timing model of the virtual board (docs/virtual-board.md, "Timing model").
 *
 * A transfer of bytes [from, to) of a descriptor at bus address `addr` costs
 *     (to - from) * ns_per_byte  +  (TLPs begun in that range) * ns_per_tlp
 * where TLPs are cut at MPS-aligned bus addresses (so none crosses a 4 KiB boundary).
 * For a preset, ns_per_byte = 1 / (lanes * lane rate after 8b/10b or 128b/130b encoding) and
 * ns_per_tlp = (TLP overhead bytes) * ns_per_byte (+ tlp=). A preset's TLP also takes at least
 * the time the engine's interface needs for it (its descriptor and payload in beats of the
 * datapath at the engine clock; half beats at 512 bits, where writes and completions straddle):
 * where that is longer, the difference is added per TLP. The engine (emu_engine.c) adds the
 * per-descriptor latency and paces every transfer from its own start.
 */
#include <sched.h>
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

void emu_spin_step(bool yields)
{
	if (yields)
		sched_yield();
	else
		emu_cpu_relax();
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
	/* RQ: 4-dword write descriptors, RC: 3-dword completion descriptors; the 512-bit engine
	 * straddles both (a TLP may start in the upper half of a beat) */
	link->hdr_bytes[MP_CH_C2H] = 16;
	link->hdr_bytes[MP_CH_H2C] = 12;
	for (ch = 0; ch < MP_CH_COUNT; ch++)
		link->slot_bytes[ch] = cfg->datapath == 64 ? 32 : cfg->datapath;
	link->beat_bytes = cfg->datapath;
	link->beat_ns = 0;
	/* gen4x16 is faster than the 512-bit engine carries at 250 MHz: no engine of ours
	 * stands behind it, and the preset models the link alone (a stress setting for the
	 * host side) */
	if (!cfg->ideal && cfg->bw_Bps <= 0 && cfg->datapath && cfg->clock_mhz &&
	    cfg->raw_Bps <= cfg->datapath * 250e6)
		link->beat_ns = 1e3 / cfg->clock_mhz;
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

/* What a TLP of mps bytes costs on top of the link time where the engine's interface is
 * slower than the link. */
static double interface_extra_ns(const struct emu_link *link, unsigned int ch, uint32_t mps)
{
	unsigned int slot = link->slot_bytes[ch];
	double slots, iface, wire;

	if (link->beat_ns <= 0 || !slot)
		return 0;
	slots = (double)((link->hdr_bytes[ch] + mps + slot - 1) / slot);
	iface = slots * slot / link->beat_bytes * link->beat_ns;
	wire = mps * link->ns_per_byte[ch] + link->ns_per_tlp[ch];
	return iface > wire ? iface - wire : 0;
}

double emu_link_cost_ns(const struct emu_link *link, unsigned int ch, uint32_t mps,
			uint64_t addr, uint64_t from, uint64_t to)
{
	if (to <= from)
		return 0;
	return (double)(to - from) * link->ns_per_byte[ch] +
	       (double)(tlps(addr, to, mps) - tlps(addr, from, mps)) *
	       (link->ns_per_tlp[ch] + interface_extra_ns(link, ch, mps));
}

double emu_link_rate(const struct emu_link *link, unsigned int ch, uint32_t mps)
{
	double ns = mps * link->ns_per_byte[ch] + link->ns_per_tlp[ch] +
		    interface_extra_ns(link, ch, mps);

	return ns > 0 ? mps * 1e9 / ns : 0;
}
