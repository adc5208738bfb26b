/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The socket protocol between the "sim:" backend (sim_backend.c) and the simulated board
 * (hdl/cosim/sim_board.py). hdl/cosim/wire.py is its definition, with what each message
 * carries; tests/vboard/sim-wire.sh checks that every number here is wire.py's.
 */
#ifndef VBOARD_SIM_WIRE_H
#define VBOARD_SIM_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* every message starts with it, little-endian (as the hosts we build for are) */
struct sim_hdr {
	uint8_t op;
	uint8_t pad[3];
	uint32_t len;
	uint64_t addr;
};

#define SIM_HDR_SIZE 16
_Static_assert(sizeof(struct sim_hdr) == SIM_HDR_SIZE && offsetof(struct sim_hdr, len) == 4 &&
	       offsetof(struct sim_hdr, addr) == 8, "the header of wire.py");

/* requests (application -> simulator) */
#define SIM_REQ_RD32 1
#define SIM_REQ_WR32 2
#define SIM_REQ_CFGRD 3
#define SIM_REQ_CFGWR 4
#define SIM_REQ_QUIT 5

/* device messages (simulator -> application); HELLO on the request socket, once */
#define SIM_DEV_MEMRD 1
#define SIM_DEV_MEMWR 2
#define SIM_DEV_MSI 3
#define SIM_DEV_HELLO 4

#define SIM_HOST_BASE 0x100000000ull  /* the lowest bus address we may hand out */
#define SIM_MAX_DMA 4096u             /* bytes of one memory read or write at most */

#endif /* VBOARD_SIM_WIRE_H */
