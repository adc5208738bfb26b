// SPDX-License-Identifier: LGPL-2.1-or-later
// The C API (mprace/mprace.h): thin wrappers over the C++ classes; exceptions become negative
// errno values at this boundary and never cross it.
#include <cstdio>
#include <memory>
#include <cstring>
#include <new>

#include "mprace/mprace.h"
#include "internal.hpp"

using namespace mprace;

struct mp_board {
	explicit mp_board(Board &&b) : board(std::move(b)) {}
	Board board;
};

struct mp_buffer {
	template <class... A>
	explicit mp_buffer(A &&...a) : buf(std::forward<A>(a)...) {}
	DMABuffer buf;
};

struct mp_engine {
	mp_engine(Board &b, const EngineOptions &o) : eng(b, o) {}
	DMAEngine eng;
};

struct mp_lease {
	ChannelLease lease;
};

// mp_transfer is detail::TransferState itself: no allocation per transfer.
static detail::TransferState *st(mp_transfer *t) { return reinterpret_cast<detail::TransferState *>(t); }
static mp_transfer *handle(detail::TransferState *s) { return reinterpret_cast<mp_transfer *>(s); }

namespace {

thread_local char last_error[512];

void remember(const char *what) noexcept
{
	std::snprintf(last_error, sizeof(last_error), "%s", what);
}

template <class F>
int guard(F &&f) noexcept
{
	try {
		return f();
	} catch (const std::system_error &e) {
		int v = e.code().value();
		remember(e.what());
		return v > 0 ? -v : -EIO;
	} catch (const std::bad_alloc &) {
		remember("out of memory");
		return -ENOMEM;
	} catch (const std::exception &e) {
		remember(e.what());
		return -EIO;
	} catch (...) {
		remember("");
		return -EIO;
	}
}

bool channelOk(unsigned int c) { return c < MP_CH_COUNT; }

// The value a C caller put into an enum parameter, read without an enum-typed load: any int
// may arrive, and loading one outside the enum's values is undefined in C++.
template <class E>
unsigned int rawEnum(const E &e) noexcept
{
	static_assert(sizeof(E) == sizeof(unsigned int), "an enum of int size");
	unsigned int v;
	std::memcpy(&v, &e, sizeof(v));
	return v;
}

// The C API's buffer constructors: checks board, out and dir, then makes the buffer that
// make(dir) returns (exceptions become errno values).
template <class Make>
int new_buffer(mp_board *board, enum pd_dma_dir dir, mp_buffer **out, Make make)
{
	unsigned int d = rawEnum(dir);

	if (!board || !out)
		return -EINVAL;
	*out = nullptr;
	if (d != PD_DMA_TO_DEVICE && d != PD_DMA_FROM_DEVICE && d != PD_DMA_BIDIRECTIONAL)
		return -EINVAL;
	return guard([&] {
		*out = make(static_cast<enum pd_dma_dir>(d)).release();
		return 0;
	});
}

} // namespace

extern "C" {

int mp_board_open(const char *name, unsigned int flags, mp_board **out)
{
	if (!out)
		return -EINVAL;
	*out = nullptr;
	return guard([&] {
		auto b = std::make_unique<mp_board>(Board(name ? name : "", flags));
		*out = b.release();
		return 0;
	});
}

int mp_board_open_index(unsigned int index, unsigned int flags, mp_board **out)
{
	if (!out)
		return -EINVAL;
	*out = nullptr;
	return guard([&] {
		auto b = std::make_unique<mp_board>(Board::byIndex(index, flags));
		*out = b.release();
		return 0;
	});
}

int mp_board_close(mp_board *board)
{
	std::unique_ptr<mp_board> b(board); // Board's destructor closes
	return 0;
}

int mp_board_identify(mp_board *board, struct mp_board_info *info)
{
	if (!board || !info)
		return -EINVAL;
	return guard([&] {
		BoardInfo i = board->board.identify();
		std::memset(info, 0, sizeof(*info));
		std::snprintf(info->name, sizeof(info->name), "%s", i.name.c_str());
		info->backend = i.pci.backend;
		info->vendor = i.pci.vendor;
		info->device = i.pci.device;
		info->magic = i.magic;
		info->version_major = i.versionMajor;
		info->version_minor = i.versionMinor;
		info->caps = i.capsRaw;
		info->datapath_bytes = i.caps.datapathBytes;
		info->c2h_channels = i.caps.c2hChannels;
		info->h2c_channels = i.caps.h2cChannels;
		info->max_payload = i.caps.maxPayload;
		info->max_read_request = i.caps.maxReadRequest;
		info->msi_vectors = i.caps.msiVectors;
		info->pattern_generator = i.caps.patternGenerator;
		info->checker = i.caps.checker;
		info->loopback = i.caps.loopback;
		info->clock_mhz = i.clockMHz;
		for (unsigned int b = 0; b < PD_MAX_BARS; b++)
			info->bar_size[b] = (i.pci.bar[b].flags & PD_BAR_PRESENT) ? i.pci.bar[b].size : 0;
		return 0;
	});
}

int mp_board_reset(mp_board *board)
{
	if (!board)
		return -EINVAL;
	return guard([&] {
		board->board.reset();
		return 0;
	});
}

pd_device *mp_board_device(mp_board *board)
{
	if (!board || !board->board.isOpen())
		return nullptr;
	return board->board.device().handle();
}

int mp_reg_read(mp_board *board, uint32_t offset, uint32_t *value)
{
	if (!board || !value)
		return -EINVAL;
	return guard([&] {
		*value = board->board.getRegister(offset);
		return 0;
	});
}

int mp_reg_write(mp_board *board, uint32_t offset, uint32_t value)
{
	if (!board)
		return -EINVAL;
	return guard([&] {
		board->board.setRegister(offset, value);
		return 0;
	});
}

int mp_bar_read(mp_board *board, unsigned int bar, uint64_t offset, void *buf, size_t len)
{
	if (!board)
		return -EINVAL;
	return guard([&] {
		board->board.readBar(bar, offset, buf, len);
		return 0;
	});
}

int mp_bar_write(mp_board *board, unsigned int bar, uint64_t offset, const void *buf, size_t len)
{
	if (!board)
		return -EINVAL;
	return guard([&] {
		board->board.writeBar(bar, offset, buf, len);
		return 0;
	});
}

int mp_bar_map(mp_board *board, unsigned int bar, void **addr, size_t *size)
{
	if (!board || !addr)
		return -EINVAL;
	return guard([&] {
		*addr = board->board.mapBar(bar, 0, size);
		return 0;
	});
}

int mp_test_routing(mp_board *board, unsigned int c2h_source, unsigned int h2c_sink)
{
	if (!board)
		return -EINVAL;
	return guard([&] {
		board->board.setTestRouting(static_cast<C2HSource>(c2h_source),
					    static_cast<H2CSink>(h2c_sink));
		return 0;
	});
}

int mp_patgen_seed(mp_board *board, uint32_t seed) { return mp_reg_write(board, MP_REG_PATGEN_SEED, seed); }
int mp_patgen_rate(mp_board *board, uint32_t r) { return mp_reg_write(board, MP_REG_PATGEN_RATE, r); }
int mp_checker_reset(mp_board *board, uint32_t seed) { return mp_reg_write(board, MP_REG_CHECK_SEED, seed); }

int mp_checker_read(mp_board *board, uint32_t *words, uint32_t *errors)
{
	if (!board || (!words && !errors))
		return -EINVAL;
	return guard([&] {
		CheckerCounts c = board->board.checker();
		if (words)
			*words = c.words;
		if (errors)
			*errors = c.errors;
		return 0;
	});
}

// ---- buffers ----

int mp_buffer_alloc(mp_board *board, size_t size, mp_buffer **out)
{
	if (!board || !out)
		return -EINVAL;
	*out = nullptr;
	return guard([&] {
		auto b = std::make_unique<mp_buffer>(board->board, size);
		*out = b.release();
		return 0;
	});
}

int mp_buffer_wrap(mp_board *board, void *addr, size_t size, enum pd_dma_dir dir, mp_buffer **out)
{
	return new_buffer(board, dir, out, [&](enum pd_dma_dir d) {
		return std::make_unique<mp_buffer>(board->board, addr, size, d);
	});
}

int mp_buffer_import_dmabuf(mp_board *board, int fd, enum pd_dma_dir dir, mp_buffer **out)
{
	return new_buffer(board, dir, out, [&](enum pd_dma_dir d) {
		return std::make_unique<mp_buffer>(DMABuffer::importDmaBuf(board->board, fd, d));
	});
}

int mp_buffer_free(mp_buffer *buf)
{
	if (!buf)
		return 0;
	if (buf->buf.activeTransfers())
		return -EBUSY;
	std::unique_ptr<mp_buffer> b(buf);
	return 0;
}

int mp_buffer_abort(mp_buffer *buf)
{
	if (!buf)
		return -EINVAL;
	return guard([&] { return static_cast<int>(buf->buf.abortTransfers()); });
}

void *mp_buffer_ptr(const mp_buffer *buf) { return buf ? buf->buf.data() : nullptr; }
size_t mp_buffer_size(const mp_buffer *buf) { return buf ? buf->buf.size() : 0; }

int mp_buffer_kind(const mp_buffer *buf)
{
	if (!buf)
		return -EINVAL;
	switch (buf->buf.kind()) {
	case MemoryKind::kernel: return MP_BUFFER_KERNEL;
	case MemoryKind::imported: return MP_BUFFER_IMPORTED;
	default: return MP_BUFFER_USER;
	}
}

size_t mp_buffer_active(const mp_buffer *buf) { return buf ? buf->buf.activeTransfers() : 0; }
size_t mp_buffer_segment_count(const mp_buffer *buf) { return buf ? buf->buf.segments().size() : 0; }

int mp_buffer_segments(const mp_buffer *buf, struct pd_sg_entry *entries, size_t max)
{
	if (!buf || (max && !entries))
		return -EINVAL;
	const std::vector<Segment> &s = buf->buf.segments();
	size_t n = s.size() < max ? s.size() : max;
	for (size_t i = 0; i < n; i++) {
		entries[i].bus_addr = s[i].busAddress;
		entries[i].length = s[i].length;
	}
	return static_cast<int>(n);
}

int mp_buffer_sync(mp_buffer *buf, enum pd_sync_dir dir)
{
	unsigned int d = rawEnum(dir);

	if (!buf || (d != PD_SYNC_FOR_CPU && d != PD_SYNC_FOR_DEVICE))
		return -EINVAL;
	return guard([&] {
		if (d == PD_SYNC_FOR_CPU)
			buf->buf.syncForCpu();
		else
			buf->buf.syncForDevice();
		return 0;
	});
}

// ---- engine ----

void mp_engine_options_init(struct mp_engine_options *opts)
{
	if (!opts)
		return;
	EngineOptions d;
	std::memset(opts, 0, sizeof(*opts));
	opts->size = sizeof(*opts);
	opts->flags = 0;
	opts->ring_entries = d.ringEntries;
	opts->stall_timeout_us = d.stallTimeoutUs;
	opts->wait_timeout_ms = static_cast<uint32_t>(d.waitTimeout.count());
	opts->irq_rescan_ms = static_cast<uint32_t>(d.irqRescan.count());
}

int mp_engine_open(mp_board *board, const struct mp_engine_options *opts, mp_engine **out)
{
	if (!board || !out)
		return -EINVAL;
	*out = nullptr;
	EngineOptions o;
	if (opts) {
		// Options grow at the end; older callers pass a smaller size.
		struct mp_engine_options full;
		mp_engine_options_init(&full);
		if (opts->size < offsetof(struct mp_engine_options, irq_rescan_ms) ||
		    (opts->flags & ~MP_ENGINE_IRQ))
			return -EINVAL;
		std::memcpy(&full, opts, opts->size < sizeof(full) ? opts->size : sizeof(full));
		o.ringEntries = full.ring_entries;
		o.completion = (full.flags & MP_ENGINE_IRQ) ? Completion::Interrupt : Completion::Polling;
		o.stallTimeoutUs = full.stall_timeout_us;
		o.waitTimeout = std::chrono::milliseconds(full.wait_timeout_ms);
		o.irqRescan = std::chrono::milliseconds(full.irq_rescan_ms);
	}
	return guard([&] {
		auto e = std::make_unique<mp_engine>(board->board, o);
		*out = e.release();
		return 0;
	});
}

int mp_engine_close(mp_engine *eng)
{
	std::unique_ptr<mp_engine> e(eng);
	return 0;
}

int mp_engine_abort(mp_engine *eng, unsigned int channel)
{
	if (!eng || !channelOk(channel))
		return -EINVAL;
	return guard([&] {
		eng->eng.abort(static_cast<Channel>(channel));
		return 0;
	});
}

int mp_engine_poll(mp_engine *eng, unsigned int channel)
{
	if (!eng || !channelOk(channel))
		return -EINVAL;
	return guard([&] { return static_cast<int>(eng->eng.poll(static_cast<Channel>(channel))); });
}

int mp_engine_outstanding(mp_engine *eng, unsigned int channel, size_t *count)
{
	if (!eng || !count || !channelOk(channel))
		return -EINVAL;
	return guard([&] {
		*count = eng->eng.outstanding(static_cast<Channel>(channel));
		return 0;
	});
}

int mp_engine_lend(mp_engine *eng, unsigned int channel, mp_lease **out)
{
	if (out)
		*out = nullptr;
	if (!eng || !out || !channelOk(channel))
		return -EINVAL;
	return guard([&] {
		auto l = std::make_unique<mp_lease>();
		l->lease = eng->eng.lend(static_cast<Channel>(channel));
		*out = l.release();
		return 0;
	});
}

int mp_lease_info(const mp_lease *lease, struct mp_lease_info *info)
{
	if (!lease || !info)
		return -EINVAL;
	return guard([&] {
		const ChannelLease &l = lease->lease;
		DMADescriptorList &ring = l.ring();
		info->ring = ring[0].native();
		info->ring_bus_addr = ring.busAddress();
		info->ring_entries = ring.size();
		info->bar0_device_memory = l.bar0IsDeviceMemory();
		info->bar0 = l.bar0();
		info->bar0_size = l.bar0Size();
		info->doorbell = l.doorbell();
		return 0;
	});
}

int mp_lease_ring_doorbell(mp_lease *lease, uint32_t count)
{
	if (!lease)
		return -EINVAL;
	return guard([&] {
		lease->lease.ringDoorbell(count);
		return 0;
	});
}

void mp_lease_give_back(mp_lease *lease)
{
	std::unique_ptr<mp_lease> own(lease); // ~ChannelLease gives the channel back
}

int mp_engine_set_stall_timeout(mp_engine *eng, uint32_t us)
{
	if (!eng)
		return -EINVAL;
	return guard([&] {
		eng->eng.setStallTimeout(us);
		return 0;
	});
}

int mp_engine_set_wait_timeout(mp_engine *eng, uint32_t ms)
{
	if (!eng)
		return -EINVAL;
	return guard([&] {
		eng->eng.setWaitTimeout(std::chrono::milliseconds(ms));
		return 0;
	});
}

int mp_dma_submit(mp_engine *eng, unsigned int channel, mp_buffer *buf, uint64_t offset,
		  uint64_t length, unsigned int flags, mp_transfer **out)
{
	if (!eng || !buf || !out || !channelOk(channel))
		return -EINVAL;
	*out = nullptr;
	return guard([&] {
		Transfer t = eng->eng.submit(static_cast<Channel>(channel), buf->buf, offset, length, flags);
		*out = handle(detail::Access::detach(t));
		return 0;
	});
}

int mp_dma_submitv(mp_engine *eng, unsigned int channel, const struct mp_dma_request *reqs,
		   size_t n, mp_transfer **out)
{
	if (!eng || (n && (!reqs || !out)) || !channelOk(channel))
		return -EINVAL;
	if (n == 0)
		return 0;
	return guard([&] {
		detail::EngineState &e = *detail::Access::engine(eng->eng);
		// Requests are converted in steps onto the stack, so that a batch allocates nothing.
		// All are checked before the first step is submitted (all or nothing).
		constexpr size_t kStep = 64;
		Request r[kStep];
		for (size_t i = 0; i < n; i++) {
			if (!reqs[i].buf)
				throw Error(EINVAL, "mp_dma_submitv: NULL buffer");
			if (reqs[i].reserved)
				throw Error(EINVAL, "mp_dma_submitv: reserved must be 0");
			e.checkArgs(static_cast<Channel>(channel), detail::Access::buffer(reqs[i].buf->buf), reqs[i].offset,
				    reqs[i].length, reqs[i].flags);
		}
		if (n <= kStep) {
			for (size_t i = 0; i < n; i++)
				r[i] = Request{&reqs[i].buf->buf, reqs[i].offset, reqs[i].length, reqs[i].flags};
			e.submitMany(
				static_cast<Channel>(channel), r, n,
				[](void *ctx, size_t i, detail::TransferState *t) {
					static_cast<mp_transfer **>(ctx)[i] = handle(t);
				},
				out);
			return 0;
		}
		std::vector<Request> v(n);
		for (size_t i = 0; i < n; i++)
			v[i] = Request{&reqs[i].buf->buf, reqs[i].offset, reqs[i].length, reqs[i].flags};
		e.submitMany(
			static_cast<Channel>(channel), v.data(), n,
			[](void *ctx, size_t i, detail::TransferState *t) {
				static_cast<mp_transfer **>(ctx)[i] = handle(t);
			},
			out);
		return 0;
	});
}

int mp_dma_submit_raw(mp_engine *eng, unsigned int channel, uint64_t bus_addr, uint32_t len,
		      uint32_t ctrl, mp_transfer **out)
{
	if (!eng || !out || !channelOk(channel))
		return -EINVAL;
	*out = nullptr;
	return guard([&] {
		Transfer t = eng->eng.submitRaw(static_cast<Channel>(channel), bus_addr, len, ctrl);
		*out = handle(detail::Access::detach(t));
		return 0;
	});
}

static int blocking(mp_engine *eng, unsigned int channel, mp_buffer *buf, uint64_t offset,
		    uint64_t length, unsigned int flags, uint64_t *bytes)
{
	if (!eng || !buf)
		return -EINVAL;
	return guard([&] {
		Transfer t = eng->eng.submit(static_cast<Channel>(channel), buf->buf, offset, length, flags);
		uint64_t n = t.get();
		if (bytes)
			*bytes = n;
		return 0;
	});
}

int mp_dma_read(mp_engine *eng, mp_buffer *buf, uint64_t offset, uint64_t length, uint64_t *bytes)
{
	return blocking(eng, MP_CH_C2H, buf, offset, length, 0, bytes);
}

int mp_dma_write(mp_engine *eng, mp_buffer *buf, uint64_t offset, uint64_t length,
		 unsigned int flags, uint64_t *bytes)
{
	return blocking(eng, MP_CH_H2C, buf, offset, length, flags, bytes);
}

int mp_transfer_wait(mp_transfer *t, uint32_t timeout_ms)
{
	if (!t)
		return -EINVAL;
	detail::TransferState *s = st(t);
	return guard([&] {
		detail::EngineState &e = *s->ch->eng;
		auto now = detail::Clock::now();
		bool done = timeout_ms == MP_WAIT_FOREVER ?
				    e.wait(s, now, true) :
				    e.wait(s, now + std::chrono::milliseconds(timeout_ms), false);
		if (!done)
			return -EAGAIN;
		if (s->err)
			detail::throwTransferError(s); // mp_last_error() says what happened
		return 0;
	});
}

int mp_transfer_result(mp_transfer *t, struct mp_transfer_result *res)
{
	if (!t || !res)
		return -EINVAL;
	Transfer h = detail::Access::adopt(st(t));
	int rc = guard([&] {
		TransferResult r = h.result();
		res->done = r.done;
		res->error = -r.error;
		res->engine_error = r.engineError;
		res->eop = r.endOfPacket;
		res->bytes = r.bytes;
		return 0;
	});
	detail::Access::detach(h);
	return rc;
}

int mp_transfer_abort(mp_transfer *t)
{
	if (!t)
		return -EINVAL;
	Transfer h = detail::Access::adopt(st(t));
	int rc = guard([&] { return h.abort() ? 0 : 1; });
	detail::Access::detach(h);
	return rc;
}

void mp_transfer_release(mp_transfer *t)
{
	if (t)
		detail::Access::adopt(st(t)).release();
}

int mp_errno_from_engine_error(unsigned int code) { return errnoFromEngineError(code); }

const char *mp_strerror(int err)
{
	switch (-err) {
	case 0: return "success";
	case EINVAL: return "invalid argument (zero length, not a multiple of 4 bytes, bad handle or option)";
	case ERANGE: return "range runs past the end of the buffer";
	case EXDEV: return "the buffer belongs to another board";
	case EACCES: return "user memory not mapped for this direction";
	case ENODEV: return "no such board, not an mprace engine, closed, or stopped responding (mp_last_error() says which)";
	case EPROTONOSUPPORT: return "engine specification major version not supported";
	case EBUSY: return "busy: transfers outstanding, or the board already has an engine";
	case EAGAIN: return "transfer still running";
	case EIO: return "DMA bus error (address not mapped for the device?)";
	case ETIMEDOUT: return "DMA timed out";
	case ECANCELED: return "DMA aborted";
	case EPROTO: return "descriptor rejected by the engine";
	default: return pd_strerror(err);
	}
}

const char *mp_last_error(void)
{
	return last_error;
}

} // extern "C"
