// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Options of the virtual board: "emu" or "emu:key=value,key=value,...". The keys and their
 * meaning are documented in docs/virtual-board.md; anything unknown or malformed makes
 * pd_open fail with -EINVAL, and pd_open_error() names the option and what is wrong with it.
 */
#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "emu.h"

/* Per-TLP overhead in bytes on the wire besides the payload: framing (Gen1/2: STP + END;
 * Gen3+: the 4-byte STP token, which carries the sequence number), sequence number (Gen1/2),
 * header (C2H memory writes: 4 DW with 64-bit addresses; H2C read completions: 3 DW) and LCRC. */
#define EMU_OVH_MWR 24u
#define EMU_OVH_CPLD 20u

static void bad(const char *item, size_t len, const char *fmt, ...)
{
	char why[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	pd_backend_set_error("emu: bad option '%.*s': %s (see docs/virtual-board.md)", (int)len,
			     item, why);
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

/* A byte count (emu.h): libpcidriver's one grammar for every backend and tool. */
int emu_parse_size(const char *s, uint64_t *out)
{
	return pd_parse_size(s, out);
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

/* How a value is read, and where it goes in struct emu_config. */
enum opt_kind {
	OPT_SIZE,     /* bytes, with K/M/G/T */
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

struct opt_state {
	unsigned int fault_seen[3];   /* per fault option: channels given */
};

struct emu_option {
	const char *key;
	const char *value_doc;     /* after "key=" in the docs: "TIME", "MB/s", "N" or "" */
	enum opt_kind kind;
	enum opt_store store;
	size_t offset;             /* of the field in struct emu_config */
	double min, max;           /* OPT_SIZE, OPT_UINT, OPT_TIME (ns) */
	unsigned int rules;        /* OPT_* */
	const char *const *choices;             /* OPT_CHOICE, NULL-terminated */
	const char *word;          /* a word accepted besides numbers ("auto", "off") ... */
	double word_value;         /* ... and what it stores */
	int (*special)(struct emu_config *c, const char *v, struct opt_state *st);
	const char *hint;          /* the error message's "expected ..." */
	const char *def;           /* the default, as a value this table parses; NULL: none */
	const char *def_note;      /* added to the docs' default column */
	const char *doc;           /* the docs' meaning column */
};

static int special_link(struct emu_config *c, const char *v, struct opt_state *st)
{
	(void)st;
	return set_link(c, v);
}

static int special_bw(struct emu_config *c, const char *v, struct opt_state *st)
{
	char *end;
	double d;

	(void)st;
	errno = 0;
	d = strtod(v, &end);
	if (errno || *end || !isfinite(d) || d <= 0 || d > 1e7)
		return -EINVAL;
	c->bw_Bps = d * 1e6;
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

static int special_stall(struct emu_config *c, const char *v, struct opt_state *st)
{
	return special_fault(c->stall, &st->fault_seen[0], v);
}

static int special_buserr(struct emu_config *c, const char *v, struct opt_state *st)
{
	return special_fault(c->buserr, &st->fault_seen[1], v);
}

static int special_linkdown(struct emu_config *c, const char *v, struct opt_state *st)
{
	return special_fault(c->linkdown, &st->fault_seen[2], v);
}

static int special_user(struct emu_config *c, const char *v, struct opt_state *st)
{
	uint64_t u;

	(void)st;
	if (!strcmp(v, "none")) {
		c->user = EMU_USER_NONE;
	} else if (!strcmp(v, "stream")) {
		c->user = EMU_USER_STREAM;
	} else if (!strncmp(v, "pkt:", 4) && !emu_parse_size(v + 4, &u) && u >= 4 && !(u & 3) &&
		   u <= (1ull << 40)) {
		c->user = EMU_USER_PACKETS;
		c->user_pkt = u;
	} else {
		return -EINVAL;
	}
	return 0;
}

static const char *const sg_names[] = { "random", "merged", "pages", NULL };
static const char *const cfgwr_names[] = { "auto", "allow", "deny", NULL };

#define F(field) offsetof(struct emu_config, field)

/* In the order of docs/virtual-board.md's table, which is generated from it
 * (tests/vboard/vboard-options.sh checks). At most 32 rows: `seen` is a bit mask. */
static const struct emu_option options[] = {
	{ "link", "", OPT_SPECIAL, 0, 0, 0, 0, 0, NULL, NULL, 0, special_link,
	  "unknown link; use gen1x1 ... gen4x16 (x1, x2, x4, x8, x16) or ideal", "gen3x8", NULL,
	  "`gen1x1` … `gen4x16` (Gen 1–4, x1/x2/x4/x8/x16) or `ideal` (no added delay)" },
	{ "bw", "MB/s", OPT_SPECIAL, 0, 0, 0, 0, 0, NULL, NULL, 0, special_bw,
	  "expected a payload rate in MB/s (10^6 bytes/s), > 0", NULL, NULL,
	  "custom link: payload rate in 10^6 B/s per direction, no TLP overhead (see `tlp=`); excludes `link=`" },
	{ "lat", "TIME", OPT_TIME, ST_DBL, F(lat_ns), 0, 1e9, 0, NULL, NULL, 0, NULL,
	  "expected a time such as 800ns, 1.5us or 2ms (at most 1 s)", "1us", "(`ideal`: 0)",
	  "per-descriptor latency (descriptor fetch and first read round trip)" },
	{ "tlp", "TIME", OPT_TIME, ST_DBL, F(tlp_ns), 0, 1e9, 0, NULL, NULL, 0, NULL,
	  "expected a time such as 800ns, 1.5us or 2ms (at most 1 s)", "0", NULL,
	  "extra time per TLP, on top of the preset's header overhead" },
	{ "piord", "TIME", OPT_TIME, ST_DBL, F(pio_rd_ns), 0, 1e9, 0, NULL, NULL, 0, NULL,
	  "expected a time such as 800ns, 1.5us or 2ms (at most 1 s)", "1us", "(`ideal`: 0)",
	  "CPU time of one 32-bit read of BAR2 through the accessors (`pd_bar_read`, `pd_regs`): a non-posted read waits for its completion (1–2.5 µs on real hosts; MPRACE measured 2.4 MB/s)" },
	{ "piowr", "TIME", OPT_TIME, ST_DBL, F(pio_wr_ns), 0, 1e9, 0, NULL, NULL, 0, NULL,
	  "expected a time such as 800ns, 1.5us or 2ms (at most 1 s)", "150ns", "(`ideal`: 0)",
	  "the same for a (posted) write (MPRACE: 30.5 MB/s). A BAR2 mapping from `pd_map_bar` is plain memory and not timed" },
	{ "mps", "", OPT_SIZE, ST_U32, F(mps), 128, 4096, OPT_POW2, NULL, NULL, 0, NULL,
	  "expected a power of two from 128 to 4096 bytes", "256", NULL,
	  "max payload size the host configured, 128…4096 (PCIe Device Control); the engine uses at most 1024 (CAPS.MPS, timing)" },
	{ "mrrs", "", OPT_SIZE, ST_U32, F(mrrs), 128, 4096, OPT_POW2, NULL, NULL, 0, NULL,
	  "expected a power of two from 128 to 4096 bytes", "512", NULL,
	  "max read request size the host configured, 128…4096 (Device Control); the engine uses at most 2048 (CAPS.MRRS)" },
	{ "msi", "", OPT_UINT, ST_U32, F(msi), 1, 4, OPT_POW2, NULL, NULL, 0, NULL,
	  "expected 1, 2 or 4 MSI vectors", "4", NULL,
	  "MSI vectors granted: 1, 2 or 4 (CAPS.MSI_VECTORS, `pd_info.irq_count`)" },
	{ "mem", "", OPT_SIZE, ST_U64, F(mem), EMU_PAGE, 64.0 * (1ull << 30), OPT_POW2 | OPT_ZERO_OK,
	  NULL, NULL, 0, NULL, "expected 0 or a power of two from 4K to 64G", "64M", NULL,
	  "size of the on-board memory BAR 2 (power of two, 4K…64G; `0`: no BAR 2)" },
	{ "sg", "", OPT_CHOICE, ST_INT, F(sg), 0, 0, 0, sg_names, NULL, 0, NULL,
	  "expected random, merged or pages", "random", NULL,
	  "umem IOVA layout: `random` (runs of 1–16 pages, shuffled), `pages` (every page on its own, shuffled), `merged` (one contiguous run)" },
	{ "maxseg", "", OPT_SIZE, ST_U64, F(maxseg), EMU_PAGE, 1e19, OPT_PAGES | OPT_ZERO_OK, NULL,
	  NULL, 0, NULL, "expected 0 (no limit) or a multiple of 4K", "0", NULL,
	  "longest umem SG entry (multiple of 4K; 0 = no limit). The kernel backend cuts entries at the device's max segment size, 64 KiB by default in Linux: `maxseg=64K` mimics it" },
	{ "iova", "", OPT_UINT, ST_U64, F(iova_base), EMU_PAGE, (double)((1ull << 62) - EMU_PAGE), OPT_PAGES,
	  NULL, NULL, 0, NULL, "expected a page-aligned bus address from 0x1000 below 2^62",
	  "0xfff00000", NULL,
	  "bus address of the first mapping (page aligned, ≥ 0x1000); the default puts the first MiB of mappings below 4 GiB and the rest above, so a mapping soon straddles 4 GiB" },
	{ "seed", "", OPT_UINT, ST_U64, F(seed), 0, 1.9e19, 0, NULL, NULL, 0, NULL,
	  "expected an unsigned integer", "1", NULL,
	  "seeds the guard gaps and the `sg=` layouts (deterministic for a given sequence of calls)" },
	{ "kmax", "", OPT_SIZE, ST_U64, F(kmem_max), EMU_PAGE, PD_KMEM_MAX_SIZE, 0, NULL, NULL, 0,
	  NULL, "expected a size from 4K to 256M", "256M", NULL,
	  "largest kmem buffer (`-ENOMEM` above); `kmax=4M` mimics a kernel without CMA" },
	{ "workers", "", OPT_UINT, ST_INT, F(workers), 0, 64, 0, NULL, "auto", -1, NULL,
	  "expected auto or 0 to 64 copy threads", "auto", NULL,
	  "copy threads shared by both channels (0…64); see *Threads*" },
	{ "window", "", OPT_UINT, ST_U32, F(window), 1, 256, 0, NULL, NULL, 0, NULL,
	  "expected 1 (no read-ahead) to 256 pieces in flight", "128", NULL,
	  "pieces of data a channel keeps in flight, of one or several descriptors (1…256; 1 = no read-ahead); see *Read-ahead*" },
	{ "nt", "", OPT_SIZE, ST_U64, F(nt_min), 0, 1.8e19, 0, NULL, "off", 1.8446744073709552e19,
	  NULL, "expected a mapping size (0: always) or off", "32M", NULL,
	  "C2H fills into a mapping (kmem or umem) at least this large bypass the CPU caches (non-temporal stores); `0`: always, `off`: never" },
	{ "spin", "TIME", OPT_TIME, ST_I64, F(spin_ns), 0, 10e6, 0, NULL, "auto", -1, NULL,
	  "expected auto or a time up to 10ms, such as 20us", "auto", NULL,
	  "how long an idle channel thread polls for a doorbell before it sleeps (0…10 ms); `auto`: 20 µs, 200 µs below 4 CPUs (see *Threads*)" },
	{ "fifo", "", OPT_SIZE, ST_U64, F(fifo), 64, 1 << 30, OPT_POW2, NULL, NULL, 0, NULL,
	  "expected a power of two from 64 bytes to 1G", "256K", NULL,
	  "loopback FIFO size (power of two, 64 bytes…1G)" },
	{ "user", "", OPT_SPECIAL, 0, 0, 0, 0, 0, NULL, NULL, 0, special_user,
	  "expected none, stream or pkt:BYTES (a multiple of 4)", "none", NULL,
	  "C2H user-stream model: `none` (no user logic: a C2H from USER never gets data), `stream` (a counter, never ends a packet), `pkt:BYTES` (a counter with a packet end every BYTES, multiple of 4)" },
	{ "stall", "", OPT_SPECIAL, 0, 0, 0, 0, OPT_REPEAT, NULL, NULL, 0, special_stall,
	  "expected c2h, h2c, c2h:N or h2c:N (N: descriptor number), each channel once", NULL,
	  NULL,
	  "`c2h`, `h2c` (every descriptor of that channel stalls) or `c2h:N`, `h2c:N` (only descriptor N, once)" },
	{ "buserr", "", OPT_SPECIAL, 0, 0, 0, 0, OPT_REPEAT, NULL, NULL, 0, special_buserr,
	  "expected c2h, h2c, c2h:N or h2c:N (N: descriptor number), each channel once", NULL,
	  NULL,
	  "`c2h`, `h2c` (every descriptor) or `c2h:N`, `h2c:N` (descriptor N, once): a bus error in the middle of the data" },
	{ "linkdown", "", OPT_SPECIAL, 0, 0, 0, 0, 0, NULL, NULL, 0, special_linkdown,
	  "expected c2h, h2c, c2h:N or h2c:N (N: descriptor number)", NULL,
	  NULL,
	  "the board drops off the link when that channel starts descriptor N (or its first): from then on every register and config-space read returns all-ones (0xffffffff), writes are lost, no interrupt comes and no descriptor completes, as after a surprise removal" },
	{ "dropirq", "N", OPT_UINT, ST_I64, F(dropirq), 0, 9.2e18, 0, NULL, NULL, 0, NULL,
	  "expected the index (from 0) of the interrupt message to drop", NULL, NULL,
	  "the MSI message with index N (from 0, counted over all vectors) is lost, once" },
	{ "cfgwr", "", OPT_CHOICE, ST_INT, F(cfgwr), 0, 0, 0, cfgwr_names, NULL, 0, NULL,
	  "expected auto, allow or deny", "auto", NULL,
	  "config-space writes: `auto` (allowed with CAP_SYS_ADMIN, else `-EPERM`, like the kernel backend), `allow`, `deny`" },
	{ "clock", "", OPT_UINT, ST_U32, F(clock_mhz), 1, 1000, 0, NULL, NULL, 0, NULL,
	  "expected an engine clock from 1 to 1000 MHz", "250", NULL,
	  "engine clock in MHz (CLOCK_MHZ, the CYCLE counter's unit)" },
};

#define OPTION_COUNT (sizeof(options) / sizeof(options[0]))

static unsigned int option_index(const char *key)
{
	unsigned int k;

	for (k = 0; k < OPTION_COUNT; k++)
		if (!strcmp(options[k].key, key))
			break;
	return k;
}

static void store(struct emu_config *c, const struct emu_option *o, double d, uint64_t u, bool is_u)
{
	char *f = (char *)c + o->offset;

	switch (o->store) {
	case ST_U32: *(uint32_t *)(void *)f = is_u ? (uint32_t)u : (uint32_t)d; break;
	case ST_U64: *(uint64_t *)(void *)f = is_u ? u : d >= 1.8446744073709552e19 ? UINT64_MAX : (uint64_t)d; break;
	case ST_I64: *(int64_t *)(void *)f = is_u ? (int64_t)u : (int64_t)d; break;
	case ST_INT: *(int *)(void *)f = is_u ? (int)u : (int)d; break;
	case ST_DBL: *(double *)(void *)f = is_u ? (double)u : d; break;
	}
}

/* Parses v for option o into c; -EINVAL when it does not fit the option's rules. */
static int apply(struct emu_config *c, const struct emu_option *o, const char *v,
		 struct opt_state *st)
{
	uint64_t u;
	double d;
	unsigned int i;

	if (o->word && !strcmp(v, o->word)) {
		store(c, o, o->word_value, 0, false);
		return 0;
	}
	switch (o->kind) {
	case OPT_SPECIAL:
		return o->special(c, v, st);
	case OPT_CHOICE:
		for (i = 0; o->choices[i]; i++)
			if (!strcmp(v, o->choices[i])) {
				store(c, o, 0, i, true);
				return 0;
			}
		return -EINVAL;
	case OPT_TIME:
		if (parse_time(v, &d) || d < o->min || d > o->max)
			return -EINVAL;
		store(c, o, d, 0, false);
		return 0;
	case OPT_SIZE:
	case OPT_UINT:
		if (o->kind == OPT_SIZE ? emu_parse_size(v, &u) : parse_u64(v, &u))
			return -EINVAL;
		if (u == 0 && (o->rules & OPT_ZERO_OK)) {
			store(c, o, 0, 0, true);
			return 0;
		}
		if ((double)u < o->min || (double)u > o->max || ((o->rules & OPT_POW2) && !is_pow2(u)) ||
		    ((o->rules & OPT_PAGES) && (u & (EMU_PAGE - 1))))
			return -EINVAL;
		store(c, o, 0, u, true);
		return 0;
	}
	return -EINVAL;
}

static void defaults(struct emu_config *c)
{
	struct opt_state st = { { 0, 0, 0 } };
	unsigned int k;

	memset(c, 0, sizeof(*c));
	c->dropirq = -1;   /* none */
	for (k = 0; k < OPTION_COUNT; k++)
		if (options[k].def)
			apply(c, &options[k], options[k].def, &st);
}

/* One "key=value" item; returns 0 or -EINVAL with the reason set. */
static int parse_item(struct emu_config *c, const char *item, size_t len, unsigned int *seen,
		      struct opt_state *st)
{
	char buf[256];
	const struct emu_option *o;
	char *eq;
	unsigned int k;

	if (len == 0) {
		bad(item, len, "empty option (stray comma?)");
		return -EINVAL;
	}
	if (len >= sizeof(buf)) {
		bad(item, len, "too long");
		return -EINVAL;
	}
	memcpy(buf, item, len);
	buf[len] = '\0';
	eq = strchr(buf, '=');
	if (!eq) {
		bad(item, len, "expected key=value");
		return -EINVAL;
	}
	*eq = '\0';
	k = option_index(buf);
	if (k == OPTION_COUNT) {
		bad(item, len, "unknown option '%s'", buf);
		return -EINVAL;
	}
	o = &options[k];
	if ((*seen & (1u << k)) && !(o->rules & OPT_REPEAT)) {
		bad(item, len, "'%s' given twice", buf);
		return -EINVAL;
	}
	*seen |= 1u << k;
	if (!eq[1]) {
		bad(item, len, "missing value");
		return -EINVAL;
	}
	if (apply(c, o, eq + 1, st)) {
		bad(item, len, "%s", o->hint);
		return -EINVAL;
	}
	return 0;
}

void emu_options_markdown(FILE *f)
{
	unsigned int k;
	const struct emu_option *o;

	fputs("| option | default | meaning |\n|---|---|---|\n", f);
	for (k = 0; k < OPTION_COUNT; k++) {
		o = &options[k];
		fprintf(f, "| `%s=%s` | ", o->key, o->value_doc);
		if (o->def)
			fprintf(f, "`%s`%s%s", o->def, o->def_note ? " " : "",
				o->def_note ? o->def_note : "");
		else
			fputs("—", f);
		fprintf(f, " | %s |\n", o->doc);
	}
}

int emu_parse_options(const char *name, struct emu_config *c)
{
	const char *p, *comma;
	struct opt_state st = { { 0, 0, 0 } };
	unsigned int seen = 0;
	int ret;

	defaults(c);
	if (strncmp(name, "emu", 3) || (name[3] && name[3] != ':')) {
		pd_backend_set_error("emu: '%s' is not a virtual board name", name);
		return -EINVAL;
	}
	p = name[3] ? name + 4 : name + 3;
	while (*p) {
		comma = strchr(p, ',');
		if (!comma)
			comma = p + strlen(p);
		ret = parse_item(c, p, (size_t)(comma - p), &seen, &st);
		if (ret)
			return ret;
		if (!*comma)
			break;
		p = comma + 1;
		if (!*p) {
			bad(p, 0, "empty option after the last comma");
			return -EINVAL;
		}
	}
#define SEEN(key) (seen & (1u << option_index(key)))
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
	return 0;
}
