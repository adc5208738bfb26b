// SPDX-License-Identifier: GPL-2.0
// The network stage into a GPU (bufmgr/net_cuda.hpp): a virtual board -> Sender -> UCX over TCP
// loopback -> Receiver -> ReceiverToGpu, in one process (the receiver on a thread of its own).
// Every chunk is checked in GPU memory against the board's pattern at its stream offset; a
// wrong seed is counted word for word; a slow GPU stalls the board through the credits and
// loses nothing; a consumer that throws gives its chunk back; a stage destroyed with chunks on
// the GPU gives them back, and the receiver goes on without it; bad options. The bad options
// run without a GPU; the rest exits 77 (skip) without one.
#include <atomic>
#include <chrono>
#include <thread>

#include "board_rig.hpp"
#include "bufmgr/net_cuda.hpp"
#include "gpu_pattern.h"
#include "gpu_test.hpp"
#include "mprace-spec/pattern.h"
#include "vboard/vboard.h"

using namespace bufmgr;
using gputest::report;
using gputest::thrown;

namespace {

constexpr std::size_t KiB = 1024;
constexpr std::uint32_t kSeed = 0x5eed0000;

net::ReceiverOptions rx_options(std::size_t window, std::size_t max_chunk)
{
	net::ReceiverOptions o;
	o.listen = "127.0.0.1:0";
	o.window = window;
	o.max_chunk = max_chunk;
	return o;
}

// The virtual board's pattern generator -> `count` user-memory buffers of `chunk` bytes ->
// one receiver; run() sends `bytes` and ends the stream.
struct BoardToNet {
	Rig rig{"emu:link=gen3x8"};
	std::unique_ptr<net::SourceToNetwork<MpraceTransfer>> pipe;
	BoardToNet(std::uint16_t port, std::size_t count, std::size_t chunk)
	{
		rig.board.setPatternRate(0);
		net::SenderOptions o;
		o.receivers = {"127.0.0.1:" + std::to_string(port)};
		o.source = 7;
		net::Sender s(std::move(o));
		rig.board.setPatternSeed(kSeed);
		pipe = std::make_unique<net::SourceToNetwork<MpraceTransfer>>(rig.user(), std::move(s), count, chunk);
	}
	std::size_t run(std::size_t bytes)
	{
		const std::size_t n = pipe->run(bytes);
		pipe->sink().finish();
		return n;
	}
};

// What the receiving thread saw.
struct Seen {
	std::uint64_t chunks = 0, bytes = 0, bad_words = 0, out_of_order = 0, most_in_flight = 0;
	std::uint64_t next_offset = 0;
	std::string error;
};

// A thread for the receiving side. Joined by the destructor, after `stop` is set, also when
// the sending side threw; what the thread threw is rethrown by join().
class Receiving {
public:
	explicit Receiving(std::function<void(const std::atomic<bool> &stop)> f)
		: t_([this, f = std::move(f)] {
			  try {
				  f(stop_);
			  } catch (...) {
				  error_ = std::current_exception();
			  }
		  })
	{
	}
	~Receiving()
	{
		stop_ = true;
		if (t_.joinable())
			t_.join();
	}
	void join()
	{
		t_.join();
		if (error_)
			std::rethrow_exception(error_);
	}

private:
	std::atomic<bool> stop_{false};
	std::exception_ptr error_;
	std::thread t_;
};

// Drives `gpu` until the receiver's one sender has ended and everything is through (or `stop`);
// every chunk is checked in GPU memory by the hooks of checking() below.
void drain(net::Receiver &rx, net::ReceiverToGpu &gpu, Seen &seen, std::chrono::seconds limit,
	   const std::atomic<bool> &stop)
{
	const auto t0 = std::chrono::steady_clock::now();
	while (!stop) {
		const auto conns = rx.connections();
		if (!conns.empty() && (conns[0].ended || conns[0].lost) && rx.pending() == 0)
			break;
		if (std::chrono::steady_clock::now() - t0 > limit) {
			seen.error = "timed out";
			break;
		}
		gpu.pump(std::chrono::milliseconds(50));
		seen.most_in_flight = std::max<std::uint64_t>(seen.most_in_flight, gpu.in_flight());
	}
	gpu.flush();
}

net::ReceiverToGpuOptions checking(Seen &seen, std::uint32_t seed, std::size_t depth)
{
	net::ReceiverToGpuOptions o;
	o.depth = depth;
	o.on_done = [&seen, seed](const net::GpuNetChunk &c) {
		unsigned long long bad = 0, first = 0;
		cuda::check(gpu_check_pattern(c.gpu, c.bytes, seed + static_cast<std::uint32_t>(c.header.offset / 4), &bad,
					      &first),
			    "check");
		seen.bad_words += bad;
		seen.out_of_order += c.header.offset != seen.next_offset;
		seen.next_offset = c.header.offset + c.bytes;
		++seen.chunks;
		seen.bytes += c.bytes;
	};
	return o;
}

void test_bad_options()
{
	net::Receiver rx(rx_options(2, 64 * KiB));
	net::ReceiverToGpuOptions o;
	o.depth = 0;
	report(thrown([&] { net::ReceiverToGpu g(rx, o); }).err == EINVAL, "depth 0 -> EINVAL");
	o.depth = net::max_gpu_depth + 1;
	report(thrown([&] { net::ReceiverToGpu g(rx, o); }).err == EINVAL, "depth above the limit -> EINVAL");
	o = net::ReceiverToGpuOptions();
	o.streams = 0;
	report(thrown([&] { net::ReceiverToGpu g(rx, o); }).err == EINVAL, "no stream -> EINVAL");
	o = net::ReceiverToGpuOptions();
	o.device = -2;
	report(thrown([&] { net::ReceiverToGpu g(rx, o); }).err == EINVAL, "device -2 -> EINVAL");
	o.device = 4096;
	const auto t = thrown([&] { net::ReceiverToGpu g(rx, o); });
	report(t.err == ENODEV, "a GPU that is not there -> ENODEV", "%d %s", t.err, t.what.c_str());
}

// 2 MiB + 12 KiB through 64 KiB chunks, window 4, 2 GPU buffers: every byte checked on the GPU,
// in order, nothing missing; the sender's and the receiver's counts agree.
void test_data()
{
	net::Receiver rx(rx_options(4, 64 * KiB));
	Seen seen;
	const std::size_t bytes = 2048 * KiB + 12 * KiB;
	{
		net::ReceiverToGpu gpu(rx, checking(seen, kSeed, 2));
		Receiving t([&](const std::atomic<bool> &stop) { drain(rx, gpu, seen, std::chrono::seconds(60), stop); });
		BoardToNet tx(rx.port(), 4, 64 * KiB);
		const std::size_t sent = tx.run(bytes);
		t.join();
		report(sent == bytes, "the board sent every byte", "%zu", sent);
		report(gpu.chunks() == (bytes + 64 * KiB - 1) / (64 * KiB), "one GPU chunk per network chunk", "%llu",
		       static_cast<unsigned long long>(gpu.chunks()));
	}
	report(seen.error.empty(), "the receiver finished", "%s", seen.error.c_str());
	report(seen.bytes == bytes && seen.chunks == 33, "every chunk reached the GPU", "%llu bytes in %llu chunks",
	       static_cast<unsigned long long>(seen.bytes), static_cast<unsigned long long>(seen.chunks));
	report(seen.bad_words == 0, "every word right in GPU memory", "%llu bad",
	       static_cast<unsigned long long>(seen.bad_words));
	report(seen.out_of_order == 0, "chunks in stream order");
	report(seen.most_in_flight <= 2, "never more chunks on the GPU than its buffers", "%llu",
	       static_cast<unsigned long long>(seen.most_in_flight));
	const auto c = rx.connections().at(0);
	report(c.ended && c.missing == 0 && c.duplicates == 0 && c.incomplete == 0, "the receiver saw no loss");
}

// The same stream checked against another seed: every word is counted as wrong, so the check
// can fail.
void test_wrong_seed()
{
	net::Receiver rx(rx_options(4, 64 * KiB));
	Seen seen;
	{
		net::ReceiverToGpu gpu(rx, checking(seen, kSeed + 1, 4));
		Receiving t([&](const std::atomic<bool> &stop) { drain(rx, gpu, seen, std::chrono::seconds(60), stop); });
		BoardToNet tx(rx.port(), 4, 64 * KiB);
		tx.run(256 * KiB);
		t.join();
	}
	report(seen.bad_words == 256 * KiB / 4, "a wrong seed: every word counted", "%llu",
	       static_cast<unsigned long long>(seen.bad_words));
}

// A GPU that takes 3 ms per chunk: the board waits for credits (the run takes at least
// chunks x 3 ms, where the board alone needs well under 1 ms for them), and nothing is lost.
void test_slow_gpu()
{
	net::Receiver rx(rx_options(2, 64 * KiB));
	Seen seen;
	net::ReceiverToGpuOptions o = checking(seen, kSeed, 2);
	o.streams = 1; // the GPU takes one chunk at a time (on two streams two busy kernels overlap)
	o.on_chunk = [](const net::GpuNetChunk &, cudaStream_t st) { cuda::check(gpu_busy(st, 3000000), "busy"); };
	const std::size_t chunks = 40;
	double took = 0;
	{
		net::ReceiverToGpu gpu(rx, o);
		Receiving t([&](const std::atomic<bool> &stop) { drain(rx, gpu, seen, std::chrono::seconds(60), stop); });
		BoardToNet tx(rx.port(), 4, 64 * KiB);
		const auto t0 = std::chrono::steady_clock::now();
		tx.run(chunks * 64 * KiB);
		took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
		t.join();
	}
	// the sender runs ahead by at most its credits (2) plus its buffers (4) plus the GPU's (2)
	report(took >= (chunks - 8) * 0.003, "a slow GPU stalls the board", "%.3f s", took);
	report(seen.chunks == chunks && seen.bad_words == 0 && seen.out_of_order == 0, "a slow GPU loses nothing",
	       "%llu chunks, %llu bad words", static_cast<unsigned long long>(seen.chunks),
	       static_cast<unsigned long long>(seen.bad_words));
}

// on_chunk throws on the 5th chunk: pump() throws it, the chunk is given back (the sender is
// not starved of credits), and the stream goes on through the same stage.
void test_consumer_throws()
{
	net::Receiver rx(rx_options(2, 64 * KiB));
	Seen seen;
	net::ReceiverToGpuOptions o = checking(seen, kSeed, 2);
	std::atomic<int> calls{0}, caught{0};
	o.on_chunk = [&](const net::GpuNetChunk &, cudaStream_t) {
		if (++calls == 5)
			throw std::runtime_error("the consumer refused a chunk");
	};
	{
		net::ReceiverToGpu gpu(rx, o);
		Receiving t([&](const std::atomic<bool> &stop) {
			for (;;) {
				try {
					drain(rx, gpu, seen, std::chrono::seconds(60), stop);
					return;
				} catch (const std::runtime_error &e) {
					++caught;
				}
			}
		});
		BoardToNet tx(rx.port(), 4, 64 * KiB);
		tx.run(16 * 64 * KiB);
		t.join();
	}
	report(caught == 1, "the consumer's exception came out of pump()", "%d", caught.load());
	report(seen.chunks == 15 && seen.bad_words == 0, "the other 15 chunks arrived right", "%llu",
	       static_cast<unsigned long long>(seen.chunks));
}

// A stage destroyed while chunks are on a slow GPU: the destructor gives them back, and the
// receiver hands out the rest of the stream without a GPU.
void test_destroy_midway()
{
	net::Receiver rx(rx_options(4, 64 * KiB));
	Seen seen;
	std::uint64_t host_chunks = 0, host_bad = 0, queued = 0;
	Receiving t([&](const std::atomic<bool> &stop) {
		{
			net::ReceiverToGpuOptions o = checking(seen, kSeed, 3);
			o.on_chunk = [](const net::GpuNetChunk &, cudaStream_t st) {
				cuda::check(gpu_busy(st, 2000000), "busy");
			};
			net::ReceiverToGpu gpu(rx, o);
			while (gpu.chunks() < 6 && !stop)
				gpu.pump(std::chrono::milliseconds(50));
			queued = gpu.chunks();
		}
		const auto t0 = std::chrono::steady_clock::now();
		while (!stop && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60)) {
			const auto conns = rx.connections();
			if (!conns.empty() && conns[0].ended && rx.pending() == 0)
				break;
			if (auto c = rx.next(std::chrono::milliseconds(50))) {
				++host_chunks;
				host_bad += mp_pattern_count_mismatches(c->data, c->size, c->header.offset, kSeed);
				rx.release(*c);
			}
		}
	});
	BoardToNet tx(rx.port(), 4, 64 * KiB);
	tx.run(20 * 64 * KiB);
	t.join();
	const auto c = rx.connections().at(0);
	report(c.ended && c.chunks == 20 && c.missing == 0, "all 20 chunks delivered", "%llu",
	       static_cast<unsigned long long>(c.chunks));
	// the chunks still on the GPU at the destruction were given back unfinished (no on_done)
	report(queued + host_chunks == 20 && seen.chunks < queued && host_bad == 0,
	       "chunks on the GPU at the destruction given back; the rest read on the host",
	       "%llu queued, %llu finished on the GPU, %llu on the host, %llu bad", static_cast<unsigned long long>(queued),
	       static_cast<unsigned long long>(seen.chunks), static_cast<unsigned long long>(host_chunks),
	       static_cast<unsigned long long>(host_bad));
}

} // namespace

int main()
{
	setenv("UCX_TLS", "tcp", 1);
	vboard_register(); // the virtual board linked in: no plugin needed
	gputest::run("bad options", test_bad_options);
	if (!cuda::unavailable_reason().empty()) {
		std::printf("# %s: the rest skipped\n", cuda::unavailable_reason().c_str());
		return gputest::failures() ? 1 : 77;
	}
	gputest::run("every chunk into GPU memory, checked there", test_data);
	gputest::run("a wrong seed", test_wrong_seed);
	gputest::run("a slow GPU back-pressures the board", test_slow_gpu);
	gputest::run("a consumer that throws", test_consumer_throws);
	gputest::run("the stage destroyed with chunks on the GPU", test_destroy_midway);
	return gputest::finish();
}
