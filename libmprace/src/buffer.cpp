// SPDX-License-Identifier: LGPL-2.1-or-later
// mprace::DMABuffer, the SG splitter and the descriptor ring (DMADescriptorList).
#include <atomic>
#include <cstring>

#include "internal.hpp"

namespace mprace {

namespace {

const std::shared_ptr<detail::BoardState> &openBoard(Board &board)
{
	if (!board.isOpen())
		throw Error(ENODEV, "mprace::DMABuffer: the board is closed");
	return detail::Access::board(board);
}

// User memory: one segment per SG entry. Interior boundaries must fall on the granule, or a
// descriptor could not describe the bytes on both sides (the kernel gives page boundaries;
// this guards against a backend that does not).
void userSegments(detail::BufferState &s)
{
	const std::vector<pd_sg_entry> &sg = s.um->sg();
	std::uint64_t off = 0;
	s.segs.reserve(sg.size());
	for (std::size_t i = 0; i < sg.size(); i++) {
		bool last = i + 1 == sg.size();
		if ((sg[i].bus_addr % MP_ENGINE_GRANULE) ||
		    (!last && sg[i].length % MP_ENGINE_GRANULE) || sg[i].length == 0)
			throw Error(EINVAL, "mprace::DMABuffer: scatter-gather entry " + std::to_string(i) +
						    " is not aligned to the 4-byte granule");
		s.segs.push_back(Segment{sg[i].bus_addr, sg[i].length, off});
		off += sg[i].length;
	}
	if (off != s.size)
		throw Error(EIO, "mprace::DMABuffer: the scatter-gather list covers " +
					 std::to_string(off) + " of " + std::to_string(s.size) + " bytes");
}

} // namespace

DMABuffer::DMABuffer(Board &board, std::size_t size) : s_(std::make_unique<detail::BufferState>())
{
	s_->board = openBoard(board);
	if (size == 0 || size > PD_KMEM_MAX_SIZE)
		throw Error(EINVAL, "mprace::DMABuffer: kernel memory takes 1 byte to " +
					    std::to_string(PD_KMEM_MAX_SIZE >> 20) + " MiB per buffer, not " +
					    std::to_string(size) + " bytes" +
					    (size ? "; wrap your own memory (user memory) for larger buffers" : ""));
	s_->km.emplace(s_->board->dev, size);
	s_->ptr = s_->km->data();
	s_->size = s_->km->size();
	s_->kind = MemoryKind::kernel;
	s_->segs.push_back(Segment{s_->km->busAddress(), s_->size, 0});
}

DMABuffer::DMABuffer(Board &board, void *addr, std::size_t size, pd_dma_dir dir)
	: s_(std::make_unique<detail::BufferState>())
{
	s_->board = openBoard(board);
	if (reinterpret_cast<std::uintptr_t>(addr) % MP_ENGINE_GRANULE)
		throw Error(EINVAL, "mprace::DMABuffer: user memory must be 4-byte aligned");
	s_->um.emplace(s_->board->dev, addr, size, dir);
	s_->ptr = s_->um->data();
	s_->size = s_->um->size();
	s_->kind = MemoryKind::user;
	s_->dir = dir;
	userSegments(*s_);
}

DMABuffer::DMABuffer(Board &board, pcidriver::KernelMemory &&km)
	: s_(std::make_unique<detail::BufferState>())
{
	s_->board = openBoard(board);
	s_->km.emplace(std::move(km));
	s_->ptr = s_->km->data();
	s_->size = s_->km->size();
	s_->kind = MemoryKind::kernel;
	s_->segs.push_back(Segment{s_->km->busAddress(), s_->size, 0});
}

DMABuffer::DMABuffer(Board &board, pcidriver::UserMemory &&um, pd_dma_dir dir)
	: s_(std::make_unique<detail::BufferState>())
{
	s_->board = openBoard(board);
	if (reinterpret_cast<std::uintptr_t>(um.data()) % MP_ENGINE_GRANULE)
		throw Error(EINVAL, "mprace::DMABuffer: user memory must be 4-byte aligned");
	s_->um.emplace(std::move(um));
	s_->ptr = s_->um->data();
	s_->size = s_->um->size();
	s_->kind = s_->um->imported() ? MemoryKind::imported : MemoryKind::user;
	s_->dir = dir;
	userSegments(*s_);
}

DMABuffer DMABuffer::importDmaBuf(Board &board, int fd, pd_dma_dir dir)
{
	auto &b = *openBoard(board);
	return DMABuffer(board, pcidriver::UserMemory::importDmaBuf(b.dev, fd, dir), dir);
}

DMABuffer::DMABuffer(DMABuffer &&) noexcept = default;

DMABuffer &DMABuffer::operator=(DMABuffer &&o) noexcept
{
	if (this != &o) {
		DMABuffer gone(std::move(*this)); // destroyed (transfers cancelled) on return
		s_ = std::move(o.s_);
	}
	return *this;
}

DMABuffer::~DMABuffer()
{
	// Every transfer is cancelled before the memory goes: leaving it to a running engine
	// would let the device write into freed (or reused) memory.
	if (s_ && s_->active.load()) {
		try {
			abortTransfers();
		} catch (...) {
			// Only a failing register access could throw here; nothing better to do.
		}
	}
}

void *DMABuffer::data() const noexcept { return s_ ? s_->ptr : nullptr; }
std::size_t DMABuffer::size() const noexcept { return s_ ? s_->size : 0; }
MemoryKind DMABuffer::kind() const noexcept { return s_ ? s_->kind : MemoryKind::kernel; }
pd_dma_dir DMABuffer::direction() const noexcept { return s_ ? s_->dir : PD_DMA_BIDIRECTIONAL; }

const std::vector<Segment> &DMABuffer::segments() const noexcept
{
	static const std::vector<Segment> none;
	return s_ ? s_->segs : none;
}

std::uint64_t DMABuffer::busAddress(std::size_t offset) const
{
	if (!s_ || offset >= s_->size)
		throw Error(ERANGE, "mprace::DMABuffer::busAddress: offset past the end of the buffer");
	const std::vector<Segment> &v = s_->segs;
	// The segment holding `offset`: the last one starting at or before it.
	std::size_t lo = 0, hi = v.size();
	while (hi - lo > 1) {
		std::size_t mid = (lo + hi) / 2;
		if (v[mid].offset <= offset)
			lo = mid;
		else
			hi = mid;
	}
	return v[lo].busAddress + (offset - v[lo].offset);
}

namespace {
void needOpenBoard(const detail::BufferState *s, const char *what)
{
	if (!s || s->board->closed.load())
		throw Error(ENODEV, std::string("mprace::DMABuffer::") + what +
					    ": the buffer is empty or its board was closed");
}
} // namespace

void DMABuffer::syncForCpu()
{
	needOpenBoard(s_.get(), "syncForCpu");
	if (s_->um)
		s_->um->syncForCpu();
}

void DMABuffer::syncForDevice()
{
	needOpenBoard(s_.get(), "syncForDevice");
	if (s_->um)
		s_->um->syncForDevice();
}

std::size_t DMABuffer::activeTransfers() const noexcept { return s_ ? s_->active.load() : 0; }

std::size_t DMABuffer::abortTransfers()
{
	if (!s_ || s_->active.load() == 0)
		return 0;
	detail::BoardState &b = *s_->board;
	std::lock_guard<std::mutex> lk(b.mu);
	// Without an engine nothing can be active: closing the engine finished every transfer.
	return b.engine ? b.engine->abortBufferLocked(s_.get()) : 0;
}

pcidriver::KernelMemory *DMABuffer::kernelMemory() noexcept
{
	return s_ && s_->km ? &*s_->km : nullptr;
}

pcidriver::UserMemory *DMABuffer::userMemory() noexcept
{
	return s_ && s_->um ? &*s_->um : nullptr;
}

// ---- SGSplitter ----

SGSplitter::SGSplitter(const std::vector<Segment> &segments, std::uint64_t offset,
		       std::uint64_t length, std::uint32_t max_len) noexcept
	: remaining_(length), max_len_(max_len)
{
	if (length == 0 || segments.empty()) {
		remaining_ = 0;
		return;
	}
	// Binary search: kernel memory has one segment, fragmented user memory thousands.
	std::size_t lo = 0, hi = segments.size();
	while (hi - lo > 1) {
		std::size_t mid = (lo + hi) / 2;
		if (segments[mid].offset <= offset)
			lo = mid;
		else
			hi = mid;
	}
	seg_ = &segments[lo];
	pos_ = offset - seg_->offset;
}

bool SGSplitter::next(DescriptorChunk &out) noexcept
{
	if (remaining_ == 0)
		return false;
	// Segments may be empty only at the end; skip a finished one.
	while (pos_ >= seg_->length) {
		++seg_;
		pos_ = 0;
	}
	std::uint64_t n = seg_->length - pos_;
	if (n > remaining_)
		n = remaining_;
	if (n > max_len_)
		n = max_len_;
	out.busAddress = seg_->busAddress + pos_;
	out.length = static_cast<std::uint32_t>(n);
	pos_ += n;
	remaining_ -= n;
	return true;
}

std::size_t SGSplitter::count(const std::vector<Segment> &segments, std::uint64_t offset,
			      std::uint64_t length, std::uint32_t max_len) noexcept
{
	SGSplitter s(segments, offset, length, max_len);
	DescriptorChunk c;
	std::size_t n = 0;
	while (s.next(c))
		n++;
	return n;
}

// ---- DMADescriptor ----

// The completion record (words 4-5) is one naturally aligned 8-byte word that the engine writes
// in one go after the data; it is read and cleared with 8-byte atomics so that software never
// sees half a record and, on the virtual board, the access pairs with the model's release.
static_assert(MP_DESC_RESULT_BYTES % 8 == 0, "completion record is 8-byte aligned");

static inline std::uint64_t *recordWord(mp_hw_desc *d) noexcept
{
	return reinterpret_cast<std::uint64_t *>(reinterpret_cast<char *>(d) + MP_DESC_RESULT_BYTES);
}

void DMADescriptor::set(std::uint64_t bus_addr, std::uint32_t len, std::uint32_t ctrl,
			std::uint64_t cookie) noexcept
{
	// The record first: a reader that polls the ring on its own (a resident GPU block,
	// bufmgr/cuda_resident.cuh) must never see the new descriptor's cookie beside the record
	// of the slot's previous descriptor.
	clearRecord();
	std::atomic_thread_fence(std::memory_order_release);
	d_->addr_lo = static_cast<std::uint32_t>(bus_addr);
	d_->addr_hi = static_cast<std::uint32_t>(bus_addr >> 32);
	d_->len = len;
	d_->ctrl = ctrl;
	d_->sw_cookie_lo = static_cast<std::uint32_t>(cookie);
	d_->sw_cookie_hi = static_cast<std::uint32_t>(cookie >> 32);
}

void DMADescriptor::setControl(std::uint32_t ctrl) noexcept { d_->ctrl = ctrl; }

DMADescriptor::Record DMADescriptor::record() const noexcept
{
	std::uint64_t v = __atomic_load_n(recordWord(d_), __ATOMIC_ACQUIRE);
	Record r;
	r.bytes = static_cast<std::uint32_t>(v);
	r.status = static_cast<std::uint32_t>(v >> 32);
	return r;
}

void DMADescriptor::clearRecord() noexcept { __atomic_store_n(recordWord(d_), 0, __ATOMIC_RELAXED); }

std::uint64_t DMADescriptor::address() const noexcept
{
	return (static_cast<std::uint64_t>(d_->addr_hi) << 32) | d_->addr_lo;
}
std::uint32_t DMADescriptor::length() const noexcept { return d_->len; }
std::uint32_t DMADescriptor::control() const noexcept { return d_->ctrl; }
std::uint64_t DMADescriptor::cookie() const noexcept
{
	return (static_cast<std::uint64_t>(d_->sw_cookie_hi) << 32) | d_->sw_cookie_lo;
}

// ---- DMADescriptorList ----

namespace {
pcidriver::KernelMemory allocRing(Board &board, std::uint32_t entries)
{
	if (!mp_ring_size_valid(entries))
		throw Error(EINVAL, "mprace::DMADescriptorList: ring size " + std::to_string(entries) +
					    " is not a power of two from " +
					    std::to_string(MP_ENGINE_RING_MIN_ENTRIES) + " to " +
					    std::to_string(MP_ENGINE_RING_MAX_ENTRIES));
	if (!board.isOpen())
		throw Error(ENODEV, "mprace::DMADescriptorList: the board is closed");
	std::size_t bytes = static_cast<std::size_t>(entries) * MP_ENGINE_DESC_SIZE;
	bytes = (bytes + MP_ENGINE_PAGE_SIZE - 1) & ~static_cast<std::size_t>(MP_ENGINE_PAGE_SIZE - 1);
	pcidriver::KernelMemory km(board.device(), bytes);
	// Descriptor n lies at RING_BASE + 32 n: a 32-byte aligned base keeps every descriptor
	// inside one page (the engine reports RING_CONFIG otherwise).
	if (km.busAddress() % MP_ENGINE_DESC_SIZE)
		throw Error(EIO, "mprace::DMADescriptorList: kernel memory is not 32-byte aligned");
	return km;
}
} // namespace

DMADescriptorList::DMADescriptorList(Board &board, std::uint32_t entries)
	: mem_(allocRing(board, entries)), wrappers_(entries)
{
	std::memset(mem_.data(), 0, mem_.size());
	auto *base = static_cast<mp_hw_desc *>(mem_.data());
	for (std::uint32_t i = 0; i < entries; i++) {
		wrappers_[i].d_ = base + i;
		wrappers_[i].bus_ = mem_.busAddress() + static_cast<std::uint64_t>(i) * MP_ENGINE_DESC_SIZE;
		wrappers_[i].index_ = i;
	}
}

} // namespace mprace
