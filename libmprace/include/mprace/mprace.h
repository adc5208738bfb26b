/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmprace C API: the board, DMA buffers, the DMA engine and the test logic of our engine
 * (docs/dma-engine.md). It wraps the C++ classes of mprace/board.hpp and mprace/dma.hpp with
 * the same semantics; docs/libmprace.md has a guide and an example.
 *
 * Every function returns 0 (or a count) on success and a negative errno on failure; there is
 * no global state. Errno values (same as the C++ exceptions, see mprace/error.hpp):
 *   -EINVAL     NULL handle or argument, zero length, offset/length not a multiple of 4,
 *               unknown channel, bad option or register offset
 *   -ERANGE     offset + length past the end of the buffer
 *   -EXDEV      buffer of another board
 *   -EACCES     user memory mapped for the other direction only
 *   -ENODEV     board closed (or engine closed), or MAGIC is not our engine's at open
 *   -EPROTONOSUPPORT  engine major version differs from MP_ENGINE_VERSION_MAJOR
 *   -EBUSY      second engine on a board; test routing changed while transfers are
 *               outstanding; mp_buffer_free of a buffer that transfers still use
 *   -EAGAIN     mp_transfer_wait: the timeout expired and the transfer is still running
 *   transfer failures: -EIO (BUS_ERROR), -ETIMEDOUT (engine TIMEOUT, or the engine's software
 *               wait timeout expired in a blocking call: the transfer was aborted), -ECANCELED
 *               (aborted), -EPROTO (DESC_* / RING_CONFIG, only possible with raw descriptors)
 *
 * Threading: as in C++ (mprace/dma.hpp): engine functions are thread-safe, with one lock per
 * channel; one mp_transfer is used by one thread at a time; register access is lock-free;
 * mp_board_close and the free functions must not race other calls on the same object.
 * Per function below: \pre what the caller guarantees, \post what holds after success,
 * "Thread-safe" or "One thread" (the caller serialises calls on that object). A failing call
 * changes nothing unless it says otherwise, and mp_last_error() says why.
 *
 * Lifetime: objects made from a board may be freed in any order. mp_board_close cancels the
 * engine's transfers; calls on the engine and buffers then return -ENODEV (they still must be
 * freed). mp_transfer handles must be released with mp_transfer_release (also after the engine
 * was closed; an unfinished transfer then runs on and its result is dropped).
 */
#ifndef MPRACE_MPRACE_H
#define MPRACE_MPRACE_H

#include <stddef.h>
#include <stdint.h>

#include "pcidriver/pcidriver.h"
#include "mprace-spec/engine_spec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mp_board mp_board;
typedef struct mp_buffer mp_buffer;
typedef struct mp_engine mp_engine;
typedef struct mp_transfer mp_transfer;
typedef struct mp_lease mp_lease;

/* ---- board ---- */

/* mp_board_open flags */
#define MP_OPEN_NOCHECK (1u << 0) /* do not require our engine's MAGIC/VERSION */

/* name: a libpcidriver device name ("/dev/fpga0", "emu:link=gen3x8"); NULL or "" picks the
 * default device (see pcidriver.h). */
/* \post *out is a new handle (NULL on failure). Thread-safe. */
int mp_board_open(const char *name, unsigned int flags, mp_board **out);
/* The index-th device of pd_list(); -ENODEV if there is none. */
int mp_board_open_index(unsigned int index, unsigned int flags, mp_board **out);
/* Cancels the engine's transfers and frees the handle. NULL is ignored.
 * \pre no other thread uses board. \post board is invalid; the engine and buffers made from
 * it answer -ENODEV until freed. One thread. */
int mp_board_close(mp_board *board);

struct mp_board_info {
	char name[64];             /* PCI address or the virtual board's description */
	uint32_t backend;          /* enum pd_backend */
	uint16_t vendor, device;
	uint32_t magic;
	uint32_t version_major, version_minor;
	uint32_t caps;             /* CAPS as read */
	uint32_t datapath_bytes;
	uint32_t c2h_channels, h2c_channels;
	uint32_t max_payload;      /* bytes */
	uint32_t max_read_request; /* bytes */
	uint32_t msi_vectors;
	uint32_t pattern_generator, checker, loopback; /* 0 or 1 */
	uint32_t clock_mhz;
	uint64_t bar_size[PD_MAX_BARS];
};

/* Reads the identification registers now. \post *info filled. Thread-safe. */
int mp_board_identify(mp_board *board, struct mp_board_info *info);
/* Global CONTROL.RESET. \post the engine's transfers ended -ECANCELED and its rings are set
 * up again (usable); the test logic has its reset values (routing: user stream and sink).
 * Thread-safe. */
int mp_board_reset(mp_board *board);
pd_device *mp_board_device(mp_board *board);

/* BAR0 registers by byte offset. \pre offset 4-byte aligned, inside BAR0 (else -EINVAL).
 * Thread-safe (lock-free). */
int mp_reg_read(mp_board *board, uint32_t offset, uint32_t *value);
int mp_reg_write(mp_board *board, uint32_t offset, uint32_t value);
/* Any BAR: 32-bit copies (offset and len multiples of 4); mapping a memory BAR. */
int mp_bar_read(mp_board *board, unsigned int bar, uint64_t offset, void *buf, size_t len);
int mp_bar_write(mp_board *board, unsigned int bar, uint64_t offset, const void *buf, size_t len);
int mp_bar_map(mp_board *board, unsigned int bar, void **addr, size_t *size);

/* ---- test logic ---- */

/* source: MP_C2H_SOURCE_*, sink: MP_H2C_SINK_*. \pre no transfer outstanding (else -EBUSY).
 * \post both channels idle with the new routing. Thread-safe. */
int mp_test_routing(mp_board *board, unsigned int c2h_source, unsigned int h2c_sink);
int mp_patgen_seed(mp_board *board, uint32_t seed);
int mp_patgen_rate(mp_board *board, uint32_t mbytes_per_s); /* 0: unlimited */
int mp_checker_reset(mp_board *board, uint32_t seed);
/* -EINVAL when both words and errors are NULL. */
int mp_checker_read(mp_board *board, uint32_t *words, uint32_t *errors);

/* ---- DMA buffers ---- */

enum mp_buffer_kind { MP_BUFFER_KERNEL = 1, MP_BUFFER_USER = 2, MP_BUFFER_IMPORTED = 3 };

/* Kernel memory (DMA-coherent, one bus address). \pre 0 < size <= 256 MiB (else -EINVAL).
 * \post *out owns zeroed memory the engine can reach. Thread-safe. */
int mp_buffer_alloc(mp_board *board, size_t size, mp_buffer **out);
/* Existing memory pinned as user memory. \pre addr 4-byte aligned, size > 0, dir one of
 * enum pd_dma_dir, the memory readable (and writable for FROM_DEVICE/BIDIRECTIONAL: else
 * -EFAULT) and allocated until mp_buffer_free. \post *out maps it for the engine.
 * Thread-safe. */
int mp_buffer_wrap(mp_board *board, void *addr, size_t size, enum pd_dma_dir dir,
		   mp_buffer **out);
/* Another driver's dma-buf fd (GPU memory, udmabuf, a DMA-BUF heap) imported for the engine
 * (pd_dmabuf_import; fd stays the caller's). mp_buffer_ptr is NULL: the CPU reaches the
 * memory through its exporter. -EBADF, -EINVAL (not a dma-buf, bad dir), -EOPNOTSUPP (the
 * board cannot reach it), -ENOMEM. Thread-safe. */
int mp_buffer_import_dmabuf(mp_board *board, int fd, enum pd_dma_dir dir, mp_buffer **out);
/* -EBUSY (and nothing freed) while transfers use the buffer: wait for them or call
 * mp_buffer_abort first. NULL is ignored. \pre no other thread uses buf. One thread. */
int mp_buffer_free(mp_buffer *buf);
/* Cancels the transfers using the buffer; returns how many were cancelled.
 * \post none uses it. Thread-safe. */
int mp_buffer_abort(mp_buffer *buf);
void *mp_buffer_ptr(const mp_buffer *buf);
size_t mp_buffer_size(const mp_buffer *buf);
int mp_buffer_kind(const mp_buffer *buf);              /* enum mp_buffer_kind, or -EINVAL */
size_t mp_buffer_active(const mp_buffer *buf);         /* transfers using it now */
size_t mp_buffer_segment_count(const mp_buffer *buf);
/* Copies min(max, count) bus-address segments; returns the number copied. */
int mp_buffer_segments(const mp_buffer *buf, struct pd_sg_entry *entries, size_t max);
/* No-op for kernel memory; -ENODEV after the board was closed, -EINVAL for another dir. */
int mp_buffer_sync(mp_buffer *buf, enum pd_sync_dir dir);

/* ---- DMA engine ---- */

/* mp_engine_options.flags */
#define MP_ENGINE_IRQ (1u << 0) /* complete by interrupt (default: poll the records) */

struct mp_engine_options {
	uint32_t size;             /* sizeof(struct mp_engine_options), for later additions */
	uint32_t flags;            /* MP_ENGINE_* */
	uint32_t ring_entries;     /* per channel, power of two 2..65536 (default 1024) */
	uint32_t stall_timeout_us; /* TIMEOUT_US (default 0: never) */
	uint32_t wait_timeout_ms;  /* blocking calls (default 10000; 0: forever; x60 on sim:) */
	uint32_t irq_rescan_ms;    /* interrupt mode rescan interval (default 5) */
};

/* Fills the defaults. */
void mp_engine_options_init(struct mp_engine_options *opts);
/* opts NULL: defaults. \pre the board has no engine (else -EBUSY), options valid (ring
 * entries a power of two 2..65536, else -EINVAL). \post both channels reset and idle, rings
 * set up. Thread-safe. */
int mp_engine_open(mp_board *board, const struct mp_engine_options *opts, mp_engine **out);
/* Cancels outstanding transfers and frees the engine. NULL is ignored.
 * \pre no other thread uses eng. \post eng is invalid; live mp_transfer handles report
 * -ECANCELED and still need mp_transfer_release. One thread. */
int mp_engine_close(mp_engine *eng);
/* Cancels all transfers of a channel (MP_CH_C2H / MP_CH_H2C). \post they ended -ECANCELED;
 * the channel is reset and usable. Thread-safe. */
int mp_engine_abort(mp_engine *eng, unsigned int channel);
/* Processes completions; returns the number of transfers that finished (-ENODEV after the
 * board or the engine was closed). */
int mp_engine_poll(mp_engine *eng, unsigned int channel);
int mp_engine_outstanding(mp_engine *eng, unsigned int channel, size_t *count);
int mp_engine_set_stall_timeout(mp_engine *eng, uint32_t us);
int mp_engine_set_wait_timeout(mp_engine *eng, uint32_t ms);

/* ---- a channel lent to a producer outside the library (docs/libmprace.md) ---- */

struct mp_lease_info {
	struct mp_hw_desc *ring;       /* descriptor n in ring[n % ring_entries] (host memory) */
	uint64_t ring_bus_addr;        /* RING_BASE */
	uint32_t ring_entries;
	uint32_t bar0_device_memory;   /* 1: a board's registers; 0: the doorbell page (emu:, sim:) */
	void *bar0;                    /* BAR0 as pd_map_bar(0) maps it */
	size_t bar0_size;
	volatile uint32_t *doorbell;   /* the channel's TAIL in bar0 */
};

/* Lends the channel: maps BAR0, resets the channel (HEAD = TAIL = 0), sets RUN. Until
 * mp_lease_give_back, submits and aborts on the channel fail with -EBUSY.
 * -EINVAL bad arguments, -EBUSY transfers outstanding or lent already, -ENODEV closed, the errno
 * of pd_map_bar. Thread-safe. */
int mp_engine_lend(mp_engine *eng, unsigned int channel, mp_lease **out);
int mp_lease_info(const mp_lease *lease, struct mp_lease_info *info);
/* TAIL = count through the mapping, with a release store (the descriptors first).
 * -ENODEV once the engine or the board is closed. */
int mp_lease_ring_doorbell(mp_lease *lease, uint32_t count);
/* Resets the channel and gives it back to the engine (nothing once the engine is closed);
 * frees the lease. NULL is ignored. \pre the producer has stopped. */
void mp_lease_give_back(mp_lease *lease);

/* mp_dma_submit flags */
#define MP_DMA_EOP (1u << 0) /* H2C: tlast at the end of this transfer */

/* Asynchronous transfer of bytes [offset, offset + length) of buf; *out receives a handle that
 * must be released with mp_transfer_release.
 * \pre length > 0, offset and length multiples of 4 (else -EINVAL), inside buf (-ERANGE), buf
 * of this board (-EXDEV) and mapped for the direction (-EACCES).
 * \post the transfer is queued (it runs without further calls once in the ring).
 * Thread-safe. */
int mp_dma_submit(mp_engine *eng, unsigned int channel, mp_buffer *buf, uint64_t offset,
		  uint64_t length, unsigned int flags, mp_transfer **out);

struct mp_dma_request {
	mp_buffer *buf;
	uint64_t offset;
	uint64_t length;
	uint32_t flags;
	uint32_t reserved;
};

/* n transfers with one doorbell write; out[i] for reqs[i]. All or nothing: -EINVAL when a
 * request is bad or its reserved field is not 0. */
int mp_dma_submitv(mp_engine *eng, unsigned int channel, const struct mp_dma_request *reqs,
		   size_t n, mp_transfer **out);
/* For tests: one descriptor with these words, unchecked (see DMAEngine::submitRaw). */
int mp_dma_submit_raw(mp_engine *eng, unsigned int channel, uint64_t bus_addr, uint32_t len,
		      uint32_t ctrl, mp_transfer **out);
/* Blocking C2H / H2C (submit + wait with the engine's wait timeout); *bytes may be NULL.
 * \pre as mp_dma_submit. \post the transfer finished: 0 and *bytes = length, or its errno
 * (-ETIMEDOUT after the wait timeout: then aborted). Thread-safe. */
int mp_dma_read(mp_engine *eng, mp_buffer *buf, uint64_t offset, uint64_t length,
		uint64_t *bytes);
int mp_dma_write(mp_engine *eng, mp_buffer *buf, uint64_t offset, uint64_t length,
		 unsigned int flags, uint64_t *bytes);

#define MP_WAIT_FOREVER UINT32_MAX

/* 0 when the transfer completed successfully, -EAGAIN if it is still running after
 * timeout_ms (0: do not wait; it is left running), else its negative errno.
 * One thread per handle; different handles from any threads. */
int mp_transfer_wait(mp_transfer *t, uint32_t timeout_ms);

struct mp_transfer_result {
	uint32_t done;         /* 1 when finished */
	int32_t error;         /* 0 or a negative errno */
	uint32_t engine_error; /* MP_ERR_* reported by the engine */
	uint32_t eop;          /* C2H: the source ended a packet */
	uint64_t bytes;        /* bytes moved */
};

int mp_transfer_result(mp_transfer *t, struct mp_transfer_result *res);
/* Cancels the transfer; 0 if it was cancelled, 1 if it had already finished.
 * \post it is finished. One thread per handle. */
int mp_transfer_abort(mp_transfer *t);
/* Frees the handle; an unfinished transfer runs on. NULL is ignored. */
void mp_transfer_release(mp_transfer *t);

/* errno for an engine error code (MP_ERR_*), positive; 0 for MP_ERR_NONE. */
int mp_errno_from_engine_error(unsigned int code);
/* Text for a negative errno returned by this library: a constant string, thread-safe. */
const char *mp_strerror(int err);
/* What the last failing mp_* call of the calling thread said, in words: which board, buffer
 * or option and why (e.g. "/dev/fpga9 does not exist: is pcidriver.ko loaded ...: No such
 * device"); "" when it had nothing to add to its errno. Valid until this thread's next
 * failing call. */
const char *mp_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* MPRACE_MPRACE_H */
