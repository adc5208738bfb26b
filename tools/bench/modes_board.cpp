// SPDX-License-Identifier: GPL-2.0-or-later
//
// Modes that use the board directly through libmprace: raw DMA (kernel or user memory), the
// loopback round trip, and PIO.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <stdexcept>
#include <thread>
#include <cstring>
#include <sys/mman.h>
#include <utility>
#include <vector>

#include "../common/units.hpp"
#include "modes_impl.hpp"
#include "mprace/mprace.hpp"

using tools::format_size;
using tools::strprintf;

namespace dmabench {

namespace {

// Page-aligned anonymous memory for user-memory DMA buffers.
class Anon {
public:
	Anon() = default;
	explicit Anon(std::size_t size) : size_(size)
	{
		void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			throw std::system_error(errno, std::generic_category(), "mmap of " + format_size(size));
		p_ = p;
	}
	Anon(Anon &&o) noexcept : p_(o.p_), size_(o.size_) { o.p_ = nullptr; o.size_ = 0; }
	Anon &operator=(Anon &&o) noexcept { std::swap(p_, o.p_); std::swap(size_, o.size_); return *this; }
	~Anon() { if (p_) munmap(p_, size_); }
	void *data() const { return p_; }

private:
	void *p_ = nullptr;
	std::size_t size_ = 0;
};

// A DMA buffer of at most `want` bytes: the largest power-of-two fraction the driver grants
// (kernel memory is limited: 4 MiB guaranteed by the buddy allocator, more needs CMA; user
// memory by RLIMIT_MEMLOCK). Returns the size obtained; throws when even 4 KiB fails.
struct DmaBuf {
	Anon anon;
	std::unique_ptr<mprace::DMABuffer> buf;
	std::uint64_t size = 0;
	std::string note;
};

DmaBuf alloc_dma(mprace::Board &board, std::uint64_t want, bool umem, pd_dma_dir dir)
{
	DmaBuf d;
	std::uint64_t want4 = (want + 3) & ~3ull;
	std::uint64_t size = want4;
	if (!umem && size > PD_KMEM_MAX_SIZE)
		size = PD_KMEM_MAX_SIZE;
	const std::uint64_t floor = std::min<std::uint64_t>(want4, 4096);
	std::string last = "the library's limit";
	for (; size >= floor; size = (size / 2 + 3) & ~3ull) {
		try {
			if (umem) {
				d.anon = Anon(size);
				d.buf = std::make_unique<mprace::DMABuffer>(board, d.anon.data(), size, dir);
			} else {
				d.buf = std::make_unique<mprace::DMABuffer>(board, size);
			}
			d.size = size;
			if (size < want4)
				d.note = strprintf("%s limited to %s (%s refused: %s); larger sizes left out",
						   umem ? "user memory" : "kernel memory", format_size(size).c_str(),
						   format_size(want4).c_str(), last.c_str());
			return d;
		} catch (const std::system_error &e) {
			int err = e.code().value();
			if (err != ENOMEM && err != EINVAL && err != ENOSPC && err != EFAULT)
				throw;
			last = e.what();
		}
		if (size == floor)
			break;
	}
	throw Unavailable(std::string("cannot allocate a DMA buffer: ") + last);
}

std::uint32_t next_seed()
{
	static std::uint32_t s = 0x5eed0000u;
	return s += 0x10001u;
}

// ------------------------------------------------------------------------------ raw DMA

class DmaMode : public Mode {
public:
	DmaMode(const ModeSpec &s, Env &env) : s_(s), env_(env) {}
	std::string name() const override { return s_.canonical; }
	std::string direction() const override { return s_.c2h ? "c2h" : "h2c"; }
	std::string description() const override
	{
		return std::string(s_.latency ? "round trip of each " : "") +
		       (s_.c2h ? "raw DMA card->host (pattern generator) into " : "raw DMA host->card (checker) from ") +
		       (s_.umem ? "user memory" : "kernel memory") +
		       (s_.latency ? ", submit to completion seen, on the " +
					     std::string(env_.board_clock() ? "board's clock" : "host's clock")
				   : std::string());
	}
	std::string auto_reference() const override
	{
		return s_.umem || s_.latency ? (s_.c2h ? "c2h" : "h2c") : "";
	}
	std::uint64_t max_bytes() const override { return d_.size; }
	std::uint64_t granule() const override { return MP_ENGINE_GRANULE; }
	std::string note() const override { return d_.note; }

	void setup(std::uint64_t max_bytes) override
	{
		engine_ = &env_.engine();
		env_.route(MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
		env_.board().setPatternRate(0);
		d_ = alloc_dma(env_.board(), max_bytes, s_.umem, s_.c2h ? PD_DMA_FROM_DEVICE : PD_DMA_TO_DEVICE);
		if (!s_.c2h) {
			fill_pattern(d_.buf->data(), d_.size, 0);
			d_.buf->syncForDevice();
		}
	}
	void transfer(std::uint64_t bytes) override
	{
		const double t0 = s_.latency ? env_.now_s() : 0;
		if (s_.c2h)
			engine_->read(*d_.buf, 0, bytes);
		else
			engine_->write(*d_.buf, 0, bytes);
		if (s_.latency)
			latency_us_.push_back((env_.now_s() - t0) * 1e6);
	}
	std::vector<double> take_latencies() override { return std::exchange(latency_us_, {}); }
	bool can_verify() const override { return true; }
	bool verify(std::uint64_t bytes, std::string *why) override
	{
		mprace::Board &b = env_.board();
		std::uint32_t seed = next_seed();
		if (s_.c2h) {
			std::memset(d_.buf->data(), 0, bytes);
			d_.buf->syncForDevice();
			b.setPatternSeed(seed);
			engine_->read(*d_.buf, 0, bytes);
			d_.buf->syncForCpu();
			std::int64_t bad = check_pattern(d_.buf->data(), bytes, seed);
			if (bad < 0)
				return true;
			std::uint32_t got;
			std::memcpy(&got, static_cast<char *>(d_.buf->data()) + 4 * bad, 4);
			*why = strprintf("word %lld is 0x%08x, the pattern says 0x%08x", static_cast<long long>(bad), got,
					 mp_pattern_word(seed, static_cast<std::uint64_t>(bad)));
			return false;
		}
		fill_pattern(d_.buf->data(), bytes, seed);
		d_.buf->syncForDevice();
		b.resetChecker(seed);
		engine_->write(*d_.buf, 0, bytes);
		return checker_ok(env_, bytes, why);
	}
	void teardown() override { d_ = DmaBuf(); }

private:
	std::vector<double> latency_us_; // latency modes: since the last take_latencies()
	ModeSpec s_;
	Env &env_;
	mprace::DMAEngine *engine_ = nullptr;
	DmaBuf d_;
};

// ----------------------------------------------------------------------------- loopback

class LoopbackMode : public Mode {
public:
	explicit LoopbackMode(Env &env) : env_(env) {}
	std::string name() const override { return "loopback"; }
	std::string direction() const override { return "h2c+c2h"; }
	std::string description() const override
	{
		return "H2C into the engine's loopback FIFO while C2H drains it (kernel memory both ways)";
	}
	std::string auto_reference() const override { return "min(c2h;h2c)"; }
	std::uint64_t max_bytes() const override { return std::min(src_.size, dst_.size); }
	std::uint64_t granule() const override { return MP_ENGINE_GRANULE; }
	std::string note() const override { return !src_.note.empty() ? src_.note : dst_.note; }

	void setup(std::uint64_t max_bytes) override
	{
		if (!env_.board().info().caps.loopback)
			throw Unavailable("the engine has no loopback (CAPS.LOOPBACK = 0)");
		engine_ = &env_.engine();
		env_.route(MP_C2H_SOURCE_LOOPBACK, MP_H2C_SINK_LOOPBACK);
		src_ = alloc_dma(env_.board(), max_bytes, false, PD_DMA_TO_DEVICE);
		dst_ = alloc_dma(env_.board(), src_.size, false, PD_DMA_FROM_DEVICE);
		fill_pattern(src_.buf->data(), src_.size, 0);
		src_.buf->syncForDevice();
	}
	void transfer(std::uint64_t bytes) override
	{
		// C2H first, so that the FIFO is drained from the start and H2C never stalls long.
		mprace::Transfer rd = engine_->readAsync(*dst_.buf, 0, bytes);
		mprace::Transfer wr = engine_->writeAsync(*src_.buf, 0, bytes);
		wr.get();
		rd.get();
	}
	bool can_verify() const override { return true; }
	bool verify(std::uint64_t bytes, std::string *why) override
	{
		fill_pattern(src_.buf->data(), bytes, next_seed());
		src_.buf->syncForDevice();
		std::memset(dst_.buf->data(), 0, bytes);
		dst_.buf->syncForDevice();
		transfer(bytes);
		dst_.buf->syncForCpu();
		auto *a = static_cast<const unsigned char *>(src_.buf->data());
		auto *b = static_cast<const unsigned char *>(dst_.buf->data());
		if (std::memcmp(a, b, bytes) == 0)
			return true;
		std::uint64_t i = 0;
		while (i < bytes && a[i] == b[i])
			++i;
		*why = strprintf("byte %llu came back as 0x%02x, sent 0x%02x", static_cast<unsigned long long>(i), b[i], a[i]);
		return false;
	}
	void teardown() override
	{
		src_ = DmaBuf();
		dst_ = DmaBuf();
		env_.route(MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
	}

private:
	Env &env_;
	mprace::DMAEngine *engine_ = nullptr;
	DmaBuf src_, dst_;
};

// ---------------------------------------------------------------------------------- PIO

// On a board with a memory BAR (the virtual board's on-board memory, or user logic behind a
// BAR) PIO goes through it, wrapping around its end; otherwise it reads or writes the SCRATCH
// register of BAR0 again and again. Either way: one 32-bit CPU access per 4 bytes.
class PioMode : public Mode {
public:
	PioMode(const ModeSpec &s, Env &env) : s_(s), env_(env) {}
	std::string name() const override { return s_.canonical; }
	std::string direction() const override { return s_.c2h ? "c2h" : "h2c"; }
	std::string description() const override
	{
		std::string where = bar_ ? strprintf("BAR%u (%s)", bar_, format_size(bar_size_).c_str())
					 : std::string("the SCRATCH register of BAR0");
		return std::string(s_.c2h ? "PIO reads of " : "PIO writes to ") + where + ", 32 bits per access";
	}
	std::uint64_t max_bytes() const override { return env_.pio_max(); }
	std::uint64_t granule() const override { return 4; }

	void setup(std::uint64_t max_bytes) override
	{
		mprace::Board &b = env_.board();
		const struct pd_info &pci = b.info().pci;
		for (unsigned i = 1; i < PD_MAX_BARS; ++i) {
			const pd_bar_info &bi = pci.bar[i];
			if ((bi.flags & PD_BAR_PRESENT) && !(bi.flags & PD_BAR_IO) && bi.size >= 4096) {
				bar_ = i;
				bar_size_ = bi.size;
				break;
			}
		}
		buf_.assign(std::min<std::uint64_t>(max_bytes, env_.pio_max()) / 4 + 1, 0);
		fill_pattern(buf_.data(), buf_.size() * 4, 0x9100);
	}
	void transfer(std::uint64_t bytes) override
	{
		mprace::Board &b = env_.board();
		if (!bar_) {
			if (s_.c2h)
				for (std::uint64_t i = 0; i < bytes / 4; ++i)
					buf_[i] = b.getRegister(MP_REG_SCRATCH);
			else
				for (std::uint64_t i = 0; i < bytes / 4; ++i)
					b.setRegister(MP_REG_SCRATCH, buf_[i]);
			return;
		}
		auto *p = reinterpret_cast<unsigned char *>(buf_.data());
		for (std::uint64_t done = 0; done < bytes;) {
			std::uint64_t off = done % bar_size_;
			std::uint64_t n = std::min(bytes - done, bar_size_ - off);
			if (s_.c2h)
				b.readBar(bar_, off, p + done, n);
			else
				b.writeBar(bar_, off, p + done, n);
			done += n;
		}
	}
	bool can_verify() const override { return true; }
	bool verify(std::uint64_t bytes, std::string *why) override
	{
		mprace::Board &b = env_.board();
		std::uint32_t seed = next_seed();
		if (!bar_) {
			// One register: the last word written must read back.
			fill_pattern(buf_.data(), bytes, seed);
			if (s_.c2h)
				b.setRegister(MP_REG_SCRATCH, seed);
			transfer(bytes);
			std::uint32_t want = s_.c2h ? seed : mp_pattern_word(seed, bytes / 4 - 1);
			std::uint32_t got = s_.c2h ? buf_[bytes / 4 - 1] : b.getRegister(MP_REG_SCRATCH);
			if (got == want)
				return true;
			*why = strprintf("SCRATCH reads 0x%08x, expected 0x%08x", got, want);
			return false;
		}
		std::uint64_t n = std::min(bytes, bar_size_);
		std::vector<std::uint32_t> ref(n / 4);
		fill_pattern(ref.data(), n, seed);
		if (s_.c2h) {
			b.writeBar(bar_, 0, ref.data(), n);
			transfer(n);
		} else {
			std::memcpy(buf_.data(), ref.data(), n);
			transfer(n);
			b.readBar(bar_, 0, buf_.data(), n);
		}
		std::int64_t bad = check_pattern(buf_.data(), n, seed);
		if (bad < 0)
			return true;
		*why = strprintf("BAR%u word %lld differs from what was written", bar_, static_cast<long long>(bad));
		return false;
	}

private:
	ModeSpec s_;
	Env &env_;
	unsigned bar_ = 0;
	std::uint64_t bar_size_ = 0;
	std::vector<std::uint32_t> buf_;
};

// --------------------------------------------------------------------- CPU cost per op

// The host CPU cost of libmprace per operation: rounds of operations are submitted (one
// submit call each, or -bN: N per call, one doorbell), the board is given time to finish them
// all, and the completions are taken (Transfer::get, handles released). Only the submit and
// complete calls are timed, in the calling thread's CPU time, so the figure is what the
// library costs the host, without the board's time; the fitted latency is that cost per
// operation. A round fits the ring, so every submit call writes the doorbell once and nothing
// waits in software.
class OpsMode : public Mode {
public:
	OpsMode(const ModeSpec &s, Env &env) : s_(s), env_(env) {}
	std::string name() const override { return s_.canonical; }
	std::string direction() const override { return s_.c2h ? "c2h" : "h2c"; }
	std::string description() const override
	{
		return std::string("host CPU cost of libmprace per ") + (s_.c2h ? "C2H" : "H2C") +
		       std::string(s_.c2h ? " operation into" : " operation from") + " kernel memory: submit + complete, " +
		       (s_.batch > 1 ? std::to_string(s_.batch) + " operations per submit call"
				     : std::string("one submit call each")) +
		       " (the calling thread's CPU time in those calls only)";
	}
	std::uint64_t max_bytes() const override { return d_.size; }
	std::uint64_t granule() const override { return MP_ENGINE_GRANULE; }
	std::string note() const override { return d_.note; }
	double own_seconds() const override { return own_s_; }

	void setup(std::uint64_t max_bytes) override
	{
		engine_ = &env_.engine();
		env_.route(MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
		env_.board().setPatternRate(0);
		// one descriptor per operation: no larger than the engine's longest
		d_ = alloc_dma(env_.board(), std::min<std::uint64_t>(max_bytes, MP_ENGINE_MAX_DESC_LEN), false,
			       s_.c2h ? PD_DMA_FROM_DEVICE : PD_DMA_TO_DEVICE);
		round_ = std::max<std::size_t>(s_.batch, engine_->ringEntries() / 2 / s_.batch * s_.batch);
		handles_.resize(round_);
		reqs_.resize(s_.batch);
	}
	void transfer(std::uint64_t bytes) override { run(bytes, 1); }
	void run(std::uint64_t bytes, std::uint64_t n) override
	{
		const mprace::Channel ch = s_.c2h ? mprace::Channel::C2H : mprace::Channel::H2C;
		own_s_ = 0;
		while (n) {
			const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(n, round_));
			double t0 = thread_cpu_s();
			for (std::size_t i = 0; i < k; i += s_.batch) {
				const std::size_t m = std::min<std::size_t>(s_.batch, k - i);
				if (m == 1) {
					handles_[i] = engine_->submit(ch, *d_.buf, 0, bytes);
					continue;
				}
				for (std::size_t j = 0; j < m; ++j)
					reqs_[j] = mprace::Request{d_.buf.get(), 0, bytes, 0};
				engine_->submit(ch, reqs_.data(), m, &handles_[i]);
			}
			own_s_ += thread_cpu_s() - t0;
			wait_idle(ch);   // not timed: the board's time
			t0 = thread_cpu_s();
			for (std::size_t i = 0; i < k; ++i) {
				handles_[i].get();
				handles_[i] = mprace::Transfer();   // back to the pool: part of completing
			}
			own_s_ += thread_cpu_s() - t0;
			n -= k;
		}
	}
	void teardown() override
	{
		handles_.clear();
		d_ = DmaBuf();
	}

private:
	static double thread_cpu_s()
	{
		timespec ts;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
		return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
	}
	// Until the engine has processed every descriptor written (HEAD == TAIL), reading its
	// registers only: taking completions here would move their cost out of the timed calls.
	void wait_idle(mprace::Channel ch)
	{
		const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
		for (;;) {
			mprace::ChannelStatus st = engine_->status(ch);
			if (st.head == st.tail || st.state != MP_STATE_RUNNING)
				return;   // done, or an error that get() reports
			if (std::chrono::steady_clock::now() > deadline)
				throw std::runtime_error(name() + ": the board did not finish a round of " +
							 std::to_string(round_) + " operations within 30 s");
			std::this_thread::sleep_for(std::chrono::microseconds(100));
		}
	}

	ModeSpec s_;
	Env &env_;
	mprace::DMAEngine *engine_ = nullptr;
	DmaBuf d_;
	std::size_t round_ = 1;
	std::vector<mprace::Transfer> handles_;
	std::vector<mprace::Request> reqs_;
	double own_s_ = std::nan("");
};

} // namespace

std::unique_ptr<Mode> make_ops_mode(const ModeSpec &s, Env &env) { return std::make_unique<OpsMode>(s, env); }
std::unique_ptr<Mode> make_dma_mode(const ModeSpec &s, Env &env) { return std::make_unique<DmaMode>(s, env); }
std::unique_ptr<Mode> make_loopback_mode(const ModeSpec &, Env &env) { return std::make_unique<LoopbackMode>(env); }
std::unique_ptr<Mode> make_pio_mode(const ModeSpec &s, Env &env) { return std::make_unique<PioMode>(s, env); }

} // namespace dmabench
