// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Options of the virtual board: "emu" or "emu:key=value,key=value,...". The keys and their
 * meaning are documented in docs/virtual-board.md; anything unknown or malformed makes
 * pd_open fail with -EINVAL, and pd_open_error() names the option and what is wrong with it.
 */
#include <errno.h>
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

/* A byte count with an optional binary suffix K, M, G or T. */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	uint64_t v, mul = 1;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -EINVAL;
	if (*end) {
		switch (*end) {
		case 'k': case 'K': mul = 1ull << 10; break;
		case 'm': case 'M': mul = 1ull << 20; break;
		case 'g': case 'G': mul = 1ull << 30; break;
		case 't': case 'T': mul = 1ull << 40; break;
		default: return -EINVAL;
		}
		if (end[1])
			return -EINVAL;
	}
	if (v > UINT64_MAX / mul)
		return -EINVAL;
	*out = v * mul;
	return 0;
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
	return 0;
}

enum {
	K_LINK, K_BW, K_LAT, K_TLP, K_MPS, K_MRRS, K_MSI, K_MEM, K_KMAX, K_IOVA, K_SEED, K_FIFO,
	K_SPIN, K_SG, K_WORKERS, K_STALL, K_BUSERR, K_DROPIRQ, K_USER, K_CFGWR, K_CLOCK, K_MAXSEG,
	K_WINDOW, K_NT, K_PIORD, K_PIOWR, K_COUNT
};

static const char *const keys[K_COUNT] = {
	"link", "bw", "lat", "tlp", "mps", "mrrs", "msi", "mem", "kmax", "iova", "seed", "fifo",
	"spin", "sg", "workers", "stall", "buserr", "dropirq", "user", "cfgwr", "clock", "maxseg",
	"window", "nt", "piord", "piowr",
};

static void defaults(struct emu_config *c)
{
	memset(c, 0, sizeof(*c));
	set_link(c, "gen3x8");
	c->lat_ns = 1000;
	c->tlp_ns = 0;
	/* A CPU read of a BAR waits for the completion (1-2.5 us measured, SEEDS.md section 4;
	 * MPRACE: 2.4 MB/s); an uncached posted write costs ~0.1-0.25 us (MPRACE: 30.5 MB/s). */
	c->pio_rd_ns = 1000;
	c->pio_wr_ns = 150;
	c->mps = 256;
	c->mrrs = 512;
	c->msi = 4;
	c->clock_mhz = 250;
	c->mem = 64ull << 20;
	c->kmem_max = PD_KMEM_MAX_SIZE;
	c->iova_base = 0xfff00000ull;
	c->seed = 1;
	c->fifo = 256u << 10;
	c->spin_ns = 20000;
	c->sg = EMU_SG_RANDOM;
	c->workers = -1;
	c->window = 128;
	c->nt_min = 32ull << 20;
	c->dropirq = -1;
	c->user = EMU_USER_NONE;
	c->cfgwr = EMU_CFGWR_AUTO;
}

/* One "key=value" item; returns 0 or -EINVAL after printing why. */
static int parse_item(struct emu_config *c, const char *item, size_t len, unsigned int *seen,
		      bool *lat_set, unsigned int *pio_set, unsigned int *fault_seen)
{
	char buf[256];
	const char *v;
	char *eq;
	unsigned int k, ch;
	uint64_t u;
	double d;
	struct emu_fault f;

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
	v = eq + 1;
	for (k = 0; k < K_COUNT; k++)
		if (!strcmp(buf, keys[k]))
			break;
	if (k == K_COUNT) {
		bad(item, len, "unknown option '%s'", buf);
		return -EINVAL;
	}
	if (k != K_STALL && k != K_BUSERR) {
		if (*seen & (1u << k)) {
			bad(item, len, "'%s' given twice", buf);
			return -EINVAL;
		}
		*seen |= 1u << k;
	}
	if (!*v) {
		bad(item, len, "missing value");
		return -EINVAL;
	}

	switch (k) {
	case K_LINK:
		if (set_link(c, v)) {
			bad(item, len, "unknown link; use gen1x1 ... gen4x16 (x1, x2, x4, x8, x16) or ideal");
			return -EINVAL;
		}
		break;
	case K_BW:
		errno = 0;
		d = strtod(v, &eq);
		if (errno || *eq || !isfinite(d) || d <= 0 || d > 1e7) {
			bad(item, len, "expected a payload rate in MB/s (10^6 bytes/s), > 0");
			return -EINVAL;
		}
		c->bw_Bps = d * 1e6;
		break;
	case K_LAT:
	case K_TLP:
	case K_PIORD:
	case K_PIOWR:
		if (parse_time(v, &d) || d > 1e9) {
			bad(item, len, "expected a time such as 800ns, 1.5us or 2ms (at most 1 s)");
			return -EINVAL;
		}
		if (k == K_LAT) {
			c->lat_ns = d;
			*lat_set = true;
		} else if (k == K_TLP) {
			c->tlp_ns = d;
		} else if (k == K_PIORD) {
			c->pio_rd_ns = d;
			*pio_set |= 1;
		} else {
			c->pio_wr_ns = d;
			*pio_set |= 2;
		}
		break;
	case K_MPS:
	case K_MRRS:
		if (parse_size(v, &u) || !is_pow2(u) || u < 128 || u > 4096) {
			bad(item, len, "expected a power of two from 128 to 4096 bytes");
			return -EINVAL;
		}
		if (k == K_MPS)
			c->mps = (uint32_t)u;
		else
			c->mrrs = (uint32_t)u;
		break;
	case K_MSI:
		if (parse_u64(v, &u) || (u != 1 && u != 2 && u != 4)) {
			bad(item, len, "expected 1, 2 or 4 MSI vectors");
			return -EINVAL;
		}
		c->msi = (uint32_t)u;
		break;
	case K_MEM:
		if (parse_size(v, &u) || (u && (!is_pow2(u) || u < EMU_PAGE || u > (64ull << 30)))) {
			bad(item, len, "expected 0 or a power of two from 4K to 64G");
			return -EINVAL;
		}
		c->mem = u;
		break;
	case K_KMAX:
		if (parse_size(v, &u) || u < EMU_PAGE || u > PD_KMEM_MAX_SIZE) {
			bad(item, len, "expected a size from 4K to 256M");
			return -EINVAL;
		}
		c->kmem_max = u;
		break;
	case K_IOVA:
		if (parse_u64(v, &u) || u < EMU_PAGE || (u & (EMU_PAGE - 1)) || u >= (1ull << 62)) {
			bad(item, len, "expected a page-aligned bus address from 0x1000 below 2^62");
			return -EINVAL;
		}
		c->iova_base = u;
		break;
	case K_SEED:
		if (parse_u64(v, &u)) {
			bad(item, len, "expected an unsigned integer");
			return -EINVAL;
		}
		c->seed = u;
		break;
	case K_FIFO:
		if (parse_size(v, &u) || !is_pow2(u) || u < 64 || u > (1ull << 30)) {
			bad(item, len, "expected a power of two from 64 bytes to 1G");
			return -EINVAL;
		}
		c->fifo = u;
		break;
	case K_SPIN:
		if (parse_time(v, &d) || d > 10e6) {
			bad(item, len, "expected a time up to 10ms, such as 20us");
			return -EINVAL;
		}
		c->spin_ns = (uint64_t)d;
		break;
	case K_SG:
		if (!strcmp(v, "random"))
			c->sg = EMU_SG_RANDOM;
		else if (!strcmp(v, "merged"))
			c->sg = EMU_SG_MERGED;
		else if (!strcmp(v, "pages"))
			c->sg = EMU_SG_PAGES;
		else {
			bad(item, len, "expected random, merged or pages");
			return -EINVAL;
		}
		break;
	case K_MAXSEG:
		if (parse_size(v, &u) || (u && (u < EMU_PAGE || (u & (EMU_PAGE - 1))))) {
			bad(item, len, "expected 0 (no limit) or a multiple of 4K");
			return -EINVAL;
		}
		c->maxseg = u;
		break;
	case K_WORKERS:
		if (!strcmp(v, "auto")) {
			c->workers = -1;
		} else if (parse_u64(v, &u) || u > 64) {
			bad(item, len, "expected auto or 0 to 64 copy threads");
			return -EINVAL;
		} else {
			c->workers = (int)u;
		}
		break;
	case K_WINDOW:
		if (parse_u64(v, &u) || u < 1 || u > 256) {
			bad(item, len, "expected 1 (no read-ahead) to 256 pieces in flight");
			return -EINVAL;
		}
		c->window = (unsigned int)u;
		break;
	case K_NT:
		if (!strcmp(v, "off")) {
			c->nt_min = UINT64_MAX;
		} else if (parse_size(v, &u)) {
			bad(item, len, "expected a mapping size (0: always) or off");
			return -EINVAL;
		} else {
			c->nt_min = u;
		}
		break;
	case K_STALL:
	case K_BUSERR:
		if (parse_fault(v, &ch, &f)) {
			bad(item, len, "expected c2h, h2c, c2h:N or h2c:N (N: descriptor number)");
			return -EINVAL;
		}
		if (fault_seen[k == K_STALL] & (1u << ch)) {
			bad(item, len, "this channel was given twice");
			return -EINVAL;
		}
		fault_seen[k == K_STALL] |= 1u << ch;
		if (k == K_STALL)
			c->stall[ch] = f;
		else
			c->buserr[ch] = f;
		break;
	case K_DROPIRQ:
		if (parse_u64(v, &u) || u > INT64_MAX) {
			bad(item, len, "expected the index (from 0) of the interrupt message to drop");
			return -EINVAL;
		}
		c->dropirq = (int64_t)u;
		break;
	case K_USER:
		if (!strcmp(v, "none")) {
			c->user = EMU_USER_NONE;
		} else if (!strcmp(v, "stream")) {
			c->user = EMU_USER_STREAM;
		} else if (!strncmp(v, "pkt:", 4) && !parse_size(v + 4, &u) && u >= 4 &&
			   !(u & 3) && u <= (1ull << 40)) {
			c->user = EMU_USER_PACKETS;
			c->user_pkt = u;
		} else {
			bad(item, len, "expected none, stream or pkt:BYTES (a multiple of 4)");
			return -EINVAL;
		}
		break;
	case K_CFGWR:
		if (!strcmp(v, "auto"))
			c->cfgwr = EMU_CFGWR_AUTO;
		else if (!strcmp(v, "allow"))
			c->cfgwr = EMU_CFGWR_ALLOW;
		else if (!strcmp(v, "deny"))
			c->cfgwr = EMU_CFGWR_DENY;
		else {
			bad(item, len, "expected auto, allow or deny");
			return -EINVAL;
		}
		break;
	case K_CLOCK:
		if (parse_u64(v, &u) || u < 1 || u > 1000) {
			bad(item, len, "expected an engine clock from 1 to 1000 MHz");
			return -EINVAL;
		}
		c->clock_mhz = (uint32_t)u;
		break;
	}
	return 0;
}

int emu_parse_options(const char *name, struct emu_config *c)
{
	const char *p, *comma;
	unsigned int seen = 0, fault_seen[2] = { 0, 0 };
	bool lat_set = false;
	unsigned int pio_set = 0;
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
		ret = parse_item(c, p, (size_t)(comma - p), &seen, &lat_set, &pio_set, fault_seen);
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
	if ((seen & (1u << K_BW)) && (seen & (1u << K_LINK))) {
		pd_backend_set_error("emu: bad option 'bw=': it defines a custom link and cannot be "
				     "combined with link= (see docs/virtual-board.md)");
		return -EINVAL;
	}
	if (seen & (1u << K_BW)) {
		snprintf(c->link, sizeof(c->link), "custom");
		c->ideal = false;
		c->gen = c->lanes = 0;
		c->lane_Bps = c->raw_Bps = 0;
		c->ovh[0] = c->ovh[1] = 0;
	}
	if (c->ideal && !lat_set)
		c->lat_ns = 0;
	/* ideal adds no delay anywhere unless asked */
	if (c->ideal && !(pio_set & 1))
		c->pio_rd_ns = 0;
	if (c->ideal && !(pio_set & 2))
		c->pio_wr_ns = 0;
	return 0;
}
