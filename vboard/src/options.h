/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The options of every backend of this library, parsed from one table (options.c): device
 * names "emu:key=value,..." and "sim:key=value,...". A row of the table is tagged with the
 * backends that take it: the host rows (sg=, maxseg=, kmax=, iova=, seed=: struct
 * vb_host_config) are taken by both, the others by one or both boards. The docs' tables of
 * docs/virtual-board.md and docs/cosim.md are generated from it (vboard_options_table).
 * Sizes are read with libpcidriver's one grammar (pd_parse_size). Internal header.
 */
#ifndef VBOARD_OPTIONS_H
#define VBOARD_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "host.h"
#include "mprace-spec/engine_spec.h"

/* VB_HOST: any other backend that embeds the host object; it takes the host rows only, under
 * whatever prefix its device names have. */
enum vb_kind { VB_EMU = 0, VB_SIM, VB_HOST, VB_KINDS };

enum emu_user_mode { EMU_USER_NONE = 0, EMU_USER_STREAM, EMU_USER_PACKETS };
enum emu_cfgwr { EMU_CFGWR_AUTO = 0, EMU_CFGWR_ALLOW, EMU_CFGWR_DENY };
enum emu_fault_mode { EMU_FAULT_NONE = 0, EMU_FAULT_ALWAYS, EMU_FAULT_ONCE };

struct emu_fault {
	enum emu_fault_mode mode;
	uint64_t n;          /* EMU_FAULT_ONCE: the channel's descriptor sequence number */
};

/* The model's own options ("emu:"). */
struct emu_config {
	char link[16];       /* "gen3x8", "ideal" or "custom" */
	unsigned int gen, lanes;         /* 0 for ideal/custom */
	bool ideal;
	double lane_Bps;     /* presets: bytes/s per lane after line encoding */
	double raw_Bps;      /* presets: lanes * lane_Bps */
	double bw_Bps;       /* custom (bw=): payload bytes/s; 0 otherwise */
	unsigned int ovh[MP_CH_COUNT];   /* TLP overhead bytes per direction (presets) */
	unsigned int datapath;           /* engine datapath in bytes (CAPS.DATAPATH_BYTES) */
	uint32_t width;      /* width= in bits, 0: from the link (datapath holds the result) */
	double lat_ns;       /* per-descriptor latency */
	double tlp_ns;       /* extra time per TLP */
	double pio_rd_ns;    /* CPU cost of one 32-bit BAR2 read through the accessors */
	double pio_wr_ns;    /* ... and of one write (posted) */
	uint32_t mps, mrrs;  /* bytes */
	uint32_t msi;        /* MSI vectors granted: 1, 2 or 4 */
	uint32_t clock_mhz;
	uint64_t mem;        /* BAR2 size, 0 = absent */
	uint64_t fifo;       /* loopback FIFO bytes (power of two) */
	int64_t spin_ns;     /* idle spin of an engine thread before it sleeps; -1: auto */
	int workers;         /* copy threads; -1 = auto */
	unsigned int window; /* pieces in flight per channel (1: no read-ahead) */
	uint64_t nt_min;     /* mappings at least this large are filled bypassing the cache */
	struct emu_fault stall[MP_CH_COUNT];
	struct emu_fault buserr[MP_CH_COUNT];
	struct emu_fault linkdown[MP_CH_COUNT];
	int64_t dropirq;     /* index of the MSI message to drop, -1 = none */
	enum emu_user_mode user;
	uint64_t user_pkt;   /* EMU_USER_PACKETS: packet length in bytes */
	enum emu_cfgwr cfgwr;
};

enum sim_block { SIM_BLOCK_XILINX, SIM_BLOCK_PTILE, SIM_BLOCK_HTILE };

/* The simulated RTL's own options ("sim:"): how the simulated host behaves. */
struct sim_config {
	uint32_t mps, mrrs, msi, poll_ns, pause;
	uint32_t width;      /* the engine's datapath: 256 or 512 bits */
	int block;           /* the PCIe block around it: enum sim_block */
	uint32_t split, reorder;          /* 0 or 1 */
	char wave[256];      /* GHW waveform file, "" for none */
};

/* Everything a device name can say; the backend reads its part and `host`. */
struct vb_options {
	struct vb_host_config host;
	struct emu_config emu;
	struct sim_config sim;
};

/* Parses "emu" / "emu:opts" (or "sim..." for VB_SIM, "PREFIX" / "PREFIX:opts" for VB_HOST)
 * into *o, defaults first. On error the reason, naming the option, is set with
 * pd_backend_set_error and -EINVAL returned. */
int vb_parse_options(enum vb_kind kind, const char *name, struct vb_options *o);

/* The options table of the kind's docs page, from the table the parser uses. */
void vb_options_markdown(enum vb_kind kind, FILE *f);

#endif /* VBOARD_OPTIONS_H */
