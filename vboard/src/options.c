// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The options of every backend of this library (options.h): "emu:key=value,..." (the model,
 * docs/virtual-board.md) and "sim:key=value,..." (the RTL, docs/cosim.md), from one table
 * whose rows say which backends take them. Anything unknown, malformed, repeated or empty
 * makes pd_open fail with -EINVAL, and pd_open_error() names the option and what is wrong.
 */
#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "options.h"

/* Per-TLP overhead in bytes on the wire besides the payload: framing (Gen1/2: STP + END;
 * Gen3+: the 4-byte STP token, which carries the sequence number), sequence number (Gen1/2),
 * header (C2H memory writes: 4 DW with 64-bit addresses; H2C read completions: 3 DW) and LCRC. */
#define EMU_OVH_MWR 24u
#define EMU_OVH_CPLD 20u

static const char *const kind_docs[VB_KINDS] = {
	[VB_EMU] = "docs/virtual-board.md", [VB_SIM] = "docs/cosim.md",
	[VB_HOST] = "docs/virtual-board.md",
};

/* What is being parsed: for the error messages. */
struct parse_ctx {
	enum vb_kind kind;
	char prefix[PD_BACKEND_PREFIX_MAX + 1];
};

static void bad(const struct parse_ctx *px, const char *item, size_t len, const char *fmt, ...)
{
	char why[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	pd_backend_set_error("%s: bad option '%.*s': %s (see %s)", px->prefix, (int)len, item,
			     why, kind_docs[px->kind]);
}

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 0);
	return (errno || *end) ? -EINVAL : 0;
}

/* A time with an optional unit ns, us, ms or s (default ns); returns nanoseconds. */
static int parse_time(const char *s, double *ns)
{
	char *end;
	double v, mul = 1;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return -EINVAL;
	if (*end) {
		if (!strcmp(end, "ns"))
			mul = 1;
		else if (!strcmp(end, "us"))
			mul = 1e3;
		else if (!strcmp(end, "ms"))
			mul = 1e6;
		else if (!strcmp(end, "s"))
			mul = 1e9;
		else
			return -EINVAL;
	}
	*ns = v * mul;
	return 0;
}

/* "c2h", "h2c", "c2h:N", "h2c:N" */
static int parse_fault(const char *s, unsigned int *ch, struct emu_fault *f)
{
	if (!strncmp(s, "c2h", 3))
		*ch = MP_CH_C2H;
	else if (!strncmp(s, "h2c", 3))
		*ch = MP_CH_H2C;
	else
		return -EINVAL;
	s += 3;
	if (!*s) {
		f->mode = EMU_FAULT_ALWAYS;
		f->n = 0;
		return 0;
	}
	if (*s != ':' || parse_u64(s + 1, &f->n))
		return -EINVAL;
	f->mode = EMU_FAULT_ONCE;
	return 0;
}

static int set_link(struct emu_config *c, const char *v)
{
	unsigned int gen, lanes;
	char canon[16];

	if (!strcmp(v, "ideal")) {
		snprintf(c->link, sizeof(c->link), "ideal");
		c->ideal = true;
		c->gen = c->lanes = 0;
		c->lane_Bps = c->raw_Bps = 0;
		c->ovh[0] = c->ovh[1] = 0;
		c->datapath = 32;
		return 0;
	}
	if (sscanf(v, "gen%ux%u", &gen, &lanes) != 2 || gen < 1 || gen > 4 ||
	    !is_pow2(lanes) || lanes > 16)
		return -EINVAL;
	snprintf(canon, sizeof(canon), "gen%ux%u", gen, lanes);
	if (strcmp(canon, v))   /* no signs, leading zeros or trailing text */
		return -EINVAL;
	snprintf(c->link, sizeof(c->link), "gen%ux%u", gen, lanes);
	c->ideal = false;
	c->gen = gen;
	c->lanes = lanes;
	/* GT/s per lane; Gen1/2 use 8b/10b, Gen3/4 128b/130b line encoding */
	switch (gen) {
	case 1: c->lane_Bps = 2.5e9 * 8 / 10 / 8; break;
	case 2: c->lane_Bps = 5.0e9 * 8 / 10 / 8; break;
	case 3: c->lane_Bps = 8.0e9 * 128 / 130 / 8; break;
	default: c->lane_Bps = 16.0e9 * 128 / 130 / 8; break;
	}
	c->raw_Bps = c->lane_Bps * lanes;
	c->ovh[MP_CH_C2H] = EMU_OVH_MWR;
	c->ovh[MP_CH_H2C] = EMU_OVH_CPLD;
	/* links faster than a 256-bit interface at 250 MHz carries (8 GB/s) get the 512-bit
	 * engine, as UltraScale+ boards at Gen3 x16 / Gen4 x8 do */
	c->datapath = c->raw_Bps > 8e9 ? 64 : 32;
	return 0;
}

/* ------------------------------------------------------------------ the options table */

/* How a value is read. */
enum opt_kind {
	OPT_SIZE,     /* bytes, in pd_parse_size's grammar */
	OPT_TIME,     /* nanoseconds, with ns/us/ms/s */
	OPT_UINT,     /* a plain unsigned integer (0x... allowed) */
	OPT_CHOICE,   /* one of `choices`: stores its index */
	OPT_SPECIAL,  /* parsed by `special` */
};
enum opt_store { ST_U32, ST_U64, ST_I64, ST_INT, ST_DBL };

#define OPT_POW2    (1u << 0)   /* a power of two */
#define OPT_ZERO_OK (1u << 1)   /* 0 is allowed besides [min, max] */
#define OPT_PAGES   (1u << 2)   /* a multiple of 4K */
#define OPT_REPEAT  (1u << 3)   /* may be given once per channel (stall=, buserr=) */

/* Which backends take a row. */
#define FOR_EMU  (1u << VB_EMU)
#define FOR_SIM  (1u << VB_SIM)
#define FOR_HOST (FOR_EMU | FOR_SIM | (1u << VB_HOST))   /* the host object's (vb_host_config) */

struct opt_state {
	unsigned int fault_seen[3];   /* per fault option: channels given */
};

struct vb_option {
	const char *key;
	unsigned int tags;         /* FOR_* */
	const char *value_doc;     /* after "key=" in the docs: "TIME", "MB/s", "N" or "" */
	enum opt_kind kind;
	enum opt_store store;
	size_t at[VB_KINDS];       /* where the value goes in struct vb_options, per backend */
	double min, max;           /* OPT_SIZE, OPT_UINT, OPT_TIME (ns) */
	unsigned int rules;        /* OPT_* */
	const char *const *choices;             /* OPT_CHOICE, NULL-terminated */
	const char *word;          /* a word accepted besides numbers ("auto", "off") ... */
	double word_value;         /* ... and what it stores */
	int (*special)(struct vb_options *o, const char *v, struct opt_state *st);
	const char *hint;          /* the error message's "expected ..." */
	const char *def[VB_KINDS]; /* the default per backend, as a value this table parses */
	const char *def_note[VB_KINDS];  /* added to the docs' default column, per backend */
	const char *doc;           /* the docs' meaning column */
};

static int special_link(struct vb_options *o, const char *v, struct opt_state *st)
{
	(void)st;
	return set_link(&o->emu, v);
}

static int special_bw(struct vb_options *o, const char *v, struct opt_state *st)
{
	char *end;
	double d;

	(void)st;
	errno = 0;
	d = strtod(v, &end);
	if (errno || *end || !isfinite(d) || d <= 0 || d > 1e7)
		return -EINVAL;
	o->emu.bw_Bps = d * 1e6;
	return 0;
}

static int special_fault(struct emu_fault *faults, unsigned int *seen, const char *v)
{
	struct emu_fault f;
	unsigned int ch;

	if (parse_fault(v, &ch, &f) || (*seen & (1u << ch)))
		return -EINVAL;
	*seen |= 1u << ch;
	faults[ch] = f;
	return 0;
}

static int special_stall(struct vb_options *o, const char *v, struct opt_state *st)
{
	return special_fault(o->emu.stall, &st->fault_seen[0], v);
}

static int special_buserr(struct vb_options *o, const char *v, struct opt_state *st)
{
	return special_fault(o->emu.buserr, &st->fault_seen[1], v);
}

static int special_linkdown(struct vb_options *o, const char *v, struct opt_state *st)
{
	return special_fault(o->emu.linkdown, &st->fault_seen[2], v);
}

static int special_user(struct vb_options *o, const char *v, struct opt_state *st)
{
	struct emu_config *c = &o->emu;
	uint64_t u;

	(void)st;
	if (!strcmp(v, "none")) {
		c->user = EMU_USER_NONE;
	} else if (!strcmp(v, "stream")) {
		c->user = EMU_USER_STREAM;
	} else if (!strncmp(v, "pkt:", 4) && !pd_parse_size(v + 4, &u) && u >= 4 && !(u & 3) &&
		   u <= (1ull << 40)) {
		c->user = EMU_USER_PACKETS;
		c->user_pkt = u;
	} else {
		return -EINVAL;
	}
	return 0;
}

static int special_wave(struct vb_options *o, const char *v, struct opt_state *st)
{
	(void)st;
	if (!*v || strlen(v) >= sizeof(o->sim.wave))
		return -EINVAL;
	strcpy(o->sim.wave, v);
	return 0;
}

static const char *const sg_names[] = { "random", "merged", "pages", NULL };
static const char *const cfgwr_names[] = { "auto", "allow", "deny", NULL };
static const char *const block_names[] = { "xilinx", "ptile", "htile", NULL };   /* enum sim_block */

#define HOST(field) { offsetof(struct vb_options, host.field), offsetof(struct vb_options, host.field), \
		      offsetof(struct vb_options, host.field) }
#define EMU(field) { offsetof(struct vb_options, emu.field), 0, 0 }
#define SIM(field) { 0, offsetof(struct vb_options, sim.field), 0 }
#define BOTH(field) { offsetof(struct vb_options, emu.field), offsetof(struct vb_options, sim.field), 0 }
#define NOWHERE { 0, 0, 0 }
#define DEF(all) { all, all, all }
#define NO_NOTE { NULL, NULL, NULL }
#define EMU_NOTE(note) { note, NULL, NULL }
#define SIM_NOTE(note) { NULL, note, NULL }
#define TIME_HINT "expected a time such as 800ns, 1.5us or 2ms (at most 1 s)"

/* In the order of the docs' tables, which are generated from it (tests/vboard/vboard-options.sh
 * checks). At most 64 rows: `seen` is a bit mask. A key may have one row per backend. */
static const struct vb_option options[] = {
	{ "link", FOR_EMU, "", OPT_SPECIAL, 0, NOWHERE, 0, 0, 0, NULL, NULL, 0, special_link,
	  "unknown link; use gen1x1 ... gen4x16 (x1, x2, x4, x8, x16) or ideal", DEF("gen3x8"), NO_NOTE,
	  "`gen1x1` … `gen4x16` (Gen 1–4, x1/x2/x4/x8/x16) or `ideal` (no added delay)" },
	{ "bw", FOR_EMU, "MB/s", OPT_SPECIAL, 0, NOWHERE, 0, 0, 0, NULL, NULL, 0, special_bw,
	  "expected a payload rate in MB/s (10^6 bytes/s), > 0", DEF(NULL), NO_NOTE,
	  "custom link: payload rate in 10^6 B/s per direction, no TLP overhead (see `tlp=`); excludes `link=`" },
	{ "width", FOR_EMU | FOR_SIM, "", OPT_UINT, ST_U32, BOTH(width), 256, 512, OPT_POW2, NULL, NULL, 0, NULL,
	  "expected 256 or 512 (bits)", { NULL, "256", NULL }, EMU_NOTE("from `link=`: `512` above 8 GB/s"),
	  "the engine's datapath in bits (CAPS.DATAPATH_BYTES × 8): `256` (UltraScale, Gen3 x8) or `512` (UltraScale+, Gen3 x16, RQ and RC straddling). On `emu:` a 256-bit engine cannot carry a link faster than 8 GB/s" },
	{ "block", FOR_SIM, "", OPT_CHOICE, ST_INT, SIM(block), 0, 0, 0, block_names, NULL, 0, NULL,
	  "expected xilinx, ptile or htile", { NULL, "xilinx", NULL }, NO_NOTE,
	  "the PCIe block around the engine: `xilinx` (`mprace_dma_top`: UltraScale at 256 bits, UltraScale+ at 512), `ptile` (`mprace_dma_top_ptile`: Intel P-tile Avalon-ST, Gen3 x8 at 256 bits, Gen3 x16 at 512) or `htile` (`mprace_dma_top_htile`: Intel Stratix 10 H-tile Avalon-ST, Gen3 x8 at 256 bits, Gen3 x16 at 512)" },
	{ "lat", FOR_EMU, "TIME", OPT_TIME, ST_DBL, EMU(lat_ns), 0, 1e9, 0, NULL, NULL, 0, NULL,
	  TIME_HINT, DEF("1us"), EMU_NOTE("(`ideal`: 0)"),
	  "per-descriptor latency (descriptor fetch and first read round trip)" },
	{ "tlp", FOR_EMU, "TIME", OPT_TIME, ST_DBL, EMU(tlp_ns), 0, 1e9, 0, NULL, NULL, 0, NULL,
	  TIME_HINT, DEF("0"), NO_NOTE,
	  "extra time per TLP, on top of the preset's header overhead" },
	{ "piord", FOR_EMU, "TIME", OPT_TIME, ST_DBL, EMU(pio_rd_ns), 0, 1e9, 0, NULL, NULL, 0, NULL,
	  TIME_HINT, DEF("1us"), EMU_NOTE("(`ideal`: 0)"),
	  "CPU time of one 32-bit read of BAR2 through the accessors (`pd_bar_read`, `pd_regs`): a non-posted read waits for its completion (1–2.5 µs on real hosts; MPRACE measured 2.4 MB/s)" },
	{ "piowr", FOR_EMU, "TIME", OPT_TIME, ST_DBL, EMU(pio_wr_ns), 0, 1e9, 0, NULL, NULL, 0, NULL,
	  TIME_HINT, DEF("150ns"), EMU_NOTE("(`ideal`: 0)"),
	  "the same for a (posted) write (MPRACE: 30.5 MB/s). A BAR2 mapping from `pd_map_bar` is plain memory and not timed" },
	{ "mps", FOR_EMU, "", OPT_SIZE, ST_U32, EMU(mps), 128, 4096, OPT_POW2, NULL, NULL, 0, NULL,
	  "expected a power of two from 128 to 4096 bytes", DEF("256"), NO_NOTE,
	  "max payload size the host configured, 128…4096 (PCIe Device Control); the engine uses at most 1024 (CAPS.MPS, timing)" },
	{ "mps", FOR_SIM, "", OPT_SIZE, ST_U32, SIM(mps), 128, 1024, OPT_POW2, NULL, NULL, 0, NULL,
	  "expected a power of two from 128 to 1024 bytes (the cores' Device Control field)", DEF("256"), NO_NOTE,
	  "max payload size the host configures, 128…1024 (Device Control; the cores' field holds no more)" },
	{ "mrrs", FOR_EMU | FOR_SIM, "", OPT_SIZE, ST_U32, BOTH(mrrs), 128, 4096, OPT_POW2, NULL, NULL, 0, NULL,
	  "expected a power of two from 128 to 4096 bytes", DEF("512"), NO_NOTE,
	  "max read request size the host configured, 128…4096 (Device Control); the engine uses at most 2048 (CAPS.MRRS)" },
	{ "msi", FOR_EMU | FOR_SIM, "", OPT_UINT, ST_U32, BOTH(msi), 1, 4, OPT_POW2, NULL, NULL, 0, NULL,
	  "expected 1, 2 or 4 MSI vectors", DEF("4"), NO_NOTE,
	  "MSI vectors granted: 1, 2 or 4 (CAPS.MSI_VECTORS, `pd_info.irq_count`)" },
	{ "mem", FOR_EMU, "", OPT_SIZE, ST_U64, EMU(mem), VB_PAGE, 64.0 * (1ull << 30), OPT_POW2 | OPT_ZERO_OK,
	  NULL, NULL, 0, NULL, "expected 0 or a power of two from 4K to 64G", DEF("64M"), NO_NOTE,
	  "size of the on-board memory BAR 2 (power of two, 4K…64G; `0`: no BAR 2)" },
	{ "sg", FOR_HOST, "", OPT_CHOICE, ST_INT, HOST(sg), 0, 0, 0, sg_names, NULL, 0, NULL,
	  "expected random, merged or pages", DEF("random"), NO_NOTE,
	  "umem IOVA layout: `random` (runs of 1–16 pages, shuffled), `pages` (every page on its own, shuffled), `merged` (one contiguous run)" },
	{ "maxseg", FOR_HOST, "", OPT_SIZE, ST_U64, HOST(maxseg), VB_PAGE, 1e19, OPT_PAGES | OPT_ZERO_OK, NULL,
	  NULL, 0, NULL, "expected 0 (no limit) or a multiple of 4K", DEF("0"), NO_NOTE,
	  "longest umem SG entry (multiple of 4K; 0 = no limit). The kernel backend cuts entries at the device's max segment size, 64 KiB by default in Linux: `maxseg=64K` mimics it" },
	{ "iova", FOR_HOST, "", OPT_UINT, ST_U64, HOST(iova_base), VB_PAGE, (double)((1ull << 62) - VB_PAGE), OPT_PAGES,
	  NULL, NULL, 0, NULL, "expected a page-aligned bus address from 0x1000 below 2^62",
	  { "0xfff00000", "0x100000000", "0xfff00000" }, SIM_NOTE("(at least 4 GiB)"),
	  "bus address of the first mapping (page aligned). `emu:`'s default puts the first MiB of mappings below 4 GiB and the rest above, so a mapping soon straddles 4 GiB; `sim:`'s root complex keeps the space below 4 GiB for its own windows" },
	{ "seed", FOR_HOST, "", OPT_UINT, ST_U64, HOST(seed), 0, 1.9e19, 0, NULL, NULL, 0, NULL,
	  "expected an unsigned integer", DEF("1"), NO_NOTE,
	  "seeds the guard gaps and the `sg=` layouts (deterministic for a given sequence of calls); on `sim:` also the host's choices (splits, order, pauses)" },
	{ "kmax", FOR_HOST, "", OPT_SIZE, ST_U64, HOST(kmem_max), VB_PAGE, PD_KMEM_MAX_SIZE, 0, NULL, NULL, 0,
	  NULL, "expected a size from 4K to 256M", DEF("256M"), NO_NOTE,
	  "largest kmem buffer (`-ENOMEM` above); `kmax=4M` mimics a kernel without CMA" },
	{ "workers", FOR_EMU, "", OPT_UINT, ST_INT, EMU(workers), 0, 64, 0, NULL, "auto", -1, NULL,
	  "expected auto or 0 to 64 copy threads", DEF("auto"), NO_NOTE,
	  "copy threads shared by both channels (0…64); see *Threads*" },
	{ "window", FOR_EMU, "", OPT_UINT, ST_U32, EMU(window), 1, 256, 0, NULL, NULL, 0, NULL,
	  "expected 1 (no read-ahead) to 256 pieces in flight", DEF("128"), NO_NOTE,
	  "pieces of data a channel keeps in flight, of one or several descriptors (1…256; 1 = no read-ahead); see *Read-ahead*" },
	{ "nt", FOR_EMU, "", OPT_SIZE, ST_U64, EMU(nt_min), 0, 1.8e19, 0, NULL, "off", 1.8446744073709552e19,
	  NULL, "expected a mapping size (0: always) or off", DEF("32M"), NO_NOTE,
	  "C2H fills into a mapping (kmem or umem) at least this large bypass the CPU caches (non-temporal stores); `0`: always, `off`: never" },
	{ "spin", FOR_EMU, "TIME", OPT_TIME, ST_I64, EMU(spin_ns), 0, 10e6, 0, NULL, "auto", -1, NULL,
	  "expected auto or a time up to 10ms, such as 20us", DEF("auto"), NO_NOTE,
	  "how long an idle channel thread polls for a doorbell before it sleeps (0…10 ms); `auto`: 20 µs, 200 µs below 4 CPUs (see *Threads*)" },
	{ "fifo", FOR_EMU, "", OPT_SIZE, ST_U64, EMU(fifo), 64, 1 << 30, OPT_POW2, NULL, NULL, 0, NULL,
	  "expected a power of two from 64 bytes to 1G", DEF("256K"), NO_NOTE,
	  "loopback FIFO size (power of two, 64 bytes…1G)" },
	{ "user", FOR_EMU, "", OPT_SPECIAL, 0, NOWHERE, 0, 0, 0, NULL, NULL, 0, special_user,
	  "expected none, stream or pkt:BYTES (a multiple of 4)", DEF("none"), NO_NOTE,
	  "C2H user-stream model: `none` (no user logic: a C2H from USER never gets data), `stream` (a counter, never ends a packet), `pkt:BYTES` (a counter with a packet end every BYTES, multiple of 4)" },
	{ "stall", FOR_EMU, "", OPT_SPECIAL, 0, NOWHERE, 0, 0, OPT_REPEAT, NULL, NULL, 0, special_stall,
	  "expected c2h, h2c, c2h:N or h2c:N (N: descriptor number), each channel once", DEF(NULL), NO_NOTE,
	  "`c2h`, `h2c` (every descriptor of that channel stalls) or `c2h:N`, `h2c:N` (only descriptor N, once)" },
	{ "buserr", FOR_EMU, "", OPT_SPECIAL, 0, NOWHERE, 0, 0, OPT_REPEAT, NULL, NULL, 0, special_buserr,
	  "expected c2h, h2c, c2h:N or h2c:N (N: descriptor number), each channel once", DEF(NULL), NO_NOTE,
	  "`c2h`, `h2c` (every descriptor) or `c2h:N`, `h2c:N` (descriptor N, once): a bus error in the middle of the data" },
	{ "linkdown", FOR_EMU, "", OPT_SPECIAL, 0, NOWHERE, 0, 0, 0, NULL, NULL, 0, special_linkdown,
	  "expected c2h, h2c, c2h:N or h2c:N (N: descriptor number)", DEF(NULL), NO_NOTE,
	  "the board drops off the link when that channel starts descriptor N (or its first): from then on every register and config-space read returns all-ones (0xffffffff), writes are lost, no interrupt comes and no descriptor completes, as after a surprise removal" },
	{ "dropirq", FOR_EMU, "N", OPT_UINT, ST_I64, EMU(dropirq), 0, 9.2e18, 0, NULL, NULL, 0, NULL,
	  "expected the index (from 0) of the interrupt message to drop", DEF(NULL), NO_NOTE,
	  "the MSI message with index N (from 0, counted over all vectors) is lost, once" },
	{ "cfgwr", FOR_EMU, "", OPT_CHOICE, ST_INT, EMU(cfgwr), 0, 0, 0, cfgwr_names, NULL, 0, NULL,
	  "expected auto, allow or deny", DEF("auto"), NO_NOTE,
	  "config-space writes: `auto` (allowed with CAP_SYS_ADMIN, else `-EPERM`, like the kernel backend), `allow`, `deny`" },
	{ "clock", FOR_EMU, "", OPT_UINT, ST_U32, EMU(clock_mhz), 1, 1000, 0, NULL, NULL, 0, NULL,
	  "expected an engine clock from 1 to 1000 MHz", DEF("250"), NO_NOTE,
	  "engine clock in MHz (CLOCK_MHZ, the CYCLE counter's unit)" },
	{ "split", FOR_SIM, "", OPT_UINT, ST_U32, SIM(split), 0, 1, 0, NULL, NULL, 0, NULL,
	  "expected 0 or 1", DEF("0"), NO_NOTE,
	  "`1`: the host splits every read completion at random read-completion boundaries" },
	{ "reorder", FOR_SIM, "", OPT_UINT, ST_U32, SIM(reorder), 0, 1, 0, NULL, NULL, 0, NULL,
	  "expected 0 or 1", DEF("0"), NO_NOTE,
	  "`1`: the host answers outstanding reads in a shuffled order (across tags)" },
	{ "pause", FOR_SIM, "PCT", OPT_UINT, ST_U32, SIM(pause), 0, 90, 0, NULL, NULL, 0, NULL,
	  "expected a percentage from 0 to 90", DEF("0"), NO_NOTE,
	  "backpressure: the core's four streams (RQ, RC, CQ, CC) stall about PCT % of the clocks, in random runs (0…90)" },
	{ "poll", FOR_SIM, "NS", OPT_UINT, ST_U32, SIM(poll_ns), 4, 100000, 0, NULL, NULL, 0, NULL,
	  "expected 4 to 100000 (simulated ns)", DEF("200"), NO_NOTE,
	  "how often, in simulated ns, the simulator looks for the application's requests" },
	{ "wave", FOR_SIM, "FILE", OPT_SPECIAL, 0, NOWHERE, 0, 0, 0, NULL, NULL, 0, special_wave,
	  "expected a file name (at most 255 bytes)", DEF(NULL), NO_NOTE,
	  "write every signal to FILE as a GHW waveform (open it with GTKWave or Surfer)" },
};

#define OPTION_COUNT (sizeof(options) / sizeof(options[0]))
_Static_assert(OPTION_COUNT <= 64, "seen is a 64-bit mask");

/* The row of `key` that backend `kind` takes, or OPTION_COUNT. */
static unsigned int option_index(enum vb_kind kind, const char *key)
{
	unsigned int k;

	for (k = 0; k < OPTION_COUNT; k++)
		if ((options[k].tags & (1u << kind)) && !strcmp(options[k].key, key))
			break;
	return k;
}

static void store(struct vb_options *opts, enum vb_kind kind, const struct vb_option *o, double d,
		  uint64_t u, bool is_u)
{
	char *f = (char *)opts + o->at[kind];

	switch (o->store) {
	case ST_U32: *(uint32_t *)(void *)f = is_u ? (uint32_t)u : (uint32_t)d; break;
	case ST_U64: *(uint64_t *)(void *)f = is_u ? u : d >= 1.8446744073709552e19 ? UINT64_MAX : (uint64_t)d; break;
	case ST_I64: *(int64_t *)(void *)f = is_u ? (int64_t)u : (int64_t)d; break;
	case ST_INT: *(int *)(void *)f = is_u ? (int)u : (int)d; break;
	case ST_DBL: *(double *)(void *)f = is_u ? (double)u : d; break;
	}
}

/* Parses v for option o into opts; -EINVAL when it does not fit the option's rules. */
static int apply(struct vb_options *opts, enum vb_kind kind, const struct vb_option *o,
		 const char *v, struct opt_state *st)
{
	uint64_t u;
	double d;
	unsigned int i;

	if (o->word && !strcmp(v, o->word)) {
		store(opts, kind, o, o->word_value, 0, false);
		return 0;
	}
	switch (o->kind) {
	case OPT_SPECIAL:
		return o->special(opts, v, st);
	case OPT_CHOICE:
		for (i = 0; o->choices[i]; i++)
			if (!strcmp(v, o->choices[i])) {
				store(opts, kind, o, 0, i, true);
				return 0;
			}
		return -EINVAL;
	case OPT_TIME:
		if (parse_time(v, &d) || d < o->min || d > o->max)
			return -EINVAL;
		store(opts, kind, o, d, 0, false);
		return 0;
	case OPT_SIZE:
	case OPT_UINT:
		if (o->kind == OPT_SIZE ? pd_parse_size(v, &u) : parse_u64(v, &u))
			return -EINVAL;
		if (u == 0 && (o->rules & OPT_ZERO_OK)) {
			store(opts, kind, o, 0, 0, true);
			return 0;
		}
		if ((double)u < o->min || (double)u > o->max || ((o->rules & OPT_POW2) && !is_pow2(u)) ||
		    ((o->rules & OPT_PAGES) && (u & (VB_PAGE - 1))))
			return -EINVAL;
		store(opts, kind, o, 0, u, true);
		return 0;
	}
	return -EINVAL;
}

static void defaults(struct vb_options *opts, enum vb_kind kind)
{
	struct opt_state st = { { 0, 0, 0 } };
	unsigned int k;

	memset(opts, 0, sizeof(*opts));
	opts->emu.dropirq = -1;   /* none */
	for (k = 0; k < OPTION_COUNT; k++)
		if ((options[k].tags & (1u << kind)) && options[k].def[kind])
			apply(opts, kind, &options[k], options[k].def[kind], &st);
}

/* One "key=value" item; returns 0 or -EINVAL with the reason set. */
static int parse_item(struct vb_options *opts, const struct parse_ctx *px, const char *item,
		      size_t len, uint64_t *seen, struct opt_state *st)
{
	enum vb_kind kind = px->kind;
	char buf[512];
	const struct vb_option *o;
	char *eq;
	unsigned int k;

	if (len == 0) {
		bad(px, item, len, "empty option (stray comma?)");
		return -EINVAL;
	}
	if (len >= sizeof(buf)) {
		bad(px, item, len, "too long");
		return -EINVAL;
	}
	memcpy(buf, item, len);
	buf[len] = '\0';
	eq = strchr(buf, '=');
	if (!eq) {
		bad(px, item, len, "expected key=value");
		return -EINVAL;
	}
	*eq = '\0';
	k = option_index(kind, buf);
	if (k == OPTION_COUNT) {
		bad(px, item, len, "unknown option '%s'", buf);
		return -EINVAL;
	}
	o = &options[k];
	if ((*seen & (1ull << k)) && !(o->rules & OPT_REPEAT)) {
		bad(px, item, len, "'%s' given twice", buf);
		return -EINVAL;
	}
	*seen |= 1ull << k;
	if (!eq[1]) {
		bad(px, item, len, "missing value");
		return -EINVAL;
	}
	if (apply(opts, kind, o, eq + 1, st)) {
		bad(px, item, len, "%s", o->hint);
		return -EINVAL;
	}
	return 0;
}

void vb_options_markdown(enum vb_kind kind, FILE *f)
{
	const struct vb_option *o;
	const char *def;
	unsigned int k;

	fputs("| option | default | meaning |\n|---|---|---|\n", f);
	for (k = 0; k < OPTION_COUNT; k++) {
		o = &options[k];
		if (!(o->tags & (1u << kind)))
			continue;
		def = o->def[kind];
		fprintf(f, "| `%s=%s` | ", o->key, o->value_doc);
		if (def)
			fprintf(f, "`%s`", def);
		if (o->def_note[kind])
			fprintf(f, "%s%s", def ? " " : "", o->def_note[kind]);
		if (!def && !o->def_note[kind])
			fputs("—", f);
		fprintf(f, " | %s |\n", o->doc);
	}
}

/* The model's rules between options (emu:). */
static int check_emu(struct emu_config *c, uint64_t seen)
{
#define SEEN(key) (seen & (1ull << option_index(VB_EMU, key)))
	if (SEEN("bw") && SEEN("link")) {
		pd_backend_set_error("emu: bad option 'bw=': it defines a custom link and cannot be "
				     "combined with link= (see docs/virtual-board.md)");
		return -EINVAL;
	}
	if (SEEN("bw")) {
		snprintf(c->link, sizeof(c->link), "custom");
		c->ideal = false;
		c->gen = c->lanes = 0;
		c->lane_Bps = c->raw_Bps = 0;
		c->ovh[0] = c->ovh[1] = 0;
	}
	/* ideal adds no delay anywhere unless asked */
	if (c->ideal && !SEEN("lat"))
		c->lat_ns = 0;
	if (c->ideal && !SEEN("piord"))
		c->pio_rd_ns = 0;
	if (c->ideal && !SEEN("piowr"))
		c->pio_wr_ns = 0;
#undef SEEN
	if (c->width) {
		if (c->width == 256 && c->raw_Bps > 8e9) {
			pd_backend_set_error("emu: bad option 'width=256': a 256-bit engine at 250 MHz "
					     "cannot carry %s (use width=512, see docs/virtual-board.md)",
					     c->link);
			return -EINVAL;
		}
		c->datapath = c->width / 8;
	}
	return 0;
}

int vb_parse_options(enum vb_kind kind, const char *name, struct vb_options *opts)
{
	static const char *const prefixes[VB_KINDS] = { [VB_EMU] = "emu", [VB_SIM] = "sim" };
	struct parse_ctx px = { .kind = kind };
	struct opt_state st = { { 0, 0, 0 } };
	const char *p, *comma;
	uint64_t seen = 0;
	size_t plen;
	int ret;

	if (kind >= VB_KINDS || !name)
		return -EINVAL;
	defaults(opts, kind);
	plen = strcspn(name, ":");
	if (kind != VB_HOST && (plen != 3 || strncmp(name, prefixes[kind], 3))) {
		pd_backend_set_error("%s: '%s' is not a %s device name", prefixes[kind], name,
				     prefixes[kind]);
		return -EINVAL;
	}
	if (!plen || plen > PD_BACKEND_PREFIX_MAX) {
		pd_backend_set_error("'%s' has no backend prefix", name);
		return -EINVAL;
	}
	memcpy(px.prefix, name, plen);
	px.prefix[plen] = '\0';
	p = name[plen] ? name + plen + 1 : name + plen;
	while (*p) {
		comma = strchr(p, ',');
		if (!comma)
			comma = p + strlen(p);
		ret = parse_item(opts, &px, p, (size_t)(comma - p), &seen, &st);
		if (ret)
			return ret;
		if (!*comma)
			break;
		p = comma + 1;
		if (!*p) {
			bad(&px, p, 0, "empty option after the last comma");
			return -EINVAL;
		}
	}
	if (kind == VB_EMU)
		return check_emu(&opts->emu, seen);
	return 0;
}
