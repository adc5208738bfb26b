// SPDX-License-Identifier: GPL-2.0
// The network stage (bufmgr/net.hpp) on one machine: virtual boards -> host -> UCX -> receivers
// in other processes, over UCX's TCP transport and over shared memory (UCX_TLS). The board's
// counter pattern checked byte for byte at the receivers, at each chunk's stream offset; 2
// senders -> 2 receivers routed by timeframe; a slow receiver (credits stall the sender, nothing
// lost); a receiver killed mid-run (the sender fails with a clear error, the other pair goes
// on); a sender killed mid-run (the receiver reports the lost connection); abort; bad
// addresses, refused connections, oversized chunks, misuse.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "test_bufmgr.hpp"
#include "bufmgr/mprace_transfer.hpp"
#include "bufmgr/net.hpp"
#include "mprace/mprace.hpp"

using namespace bufmgr;
using testbm::error_of;
using Pipe = net::SourceToNetwork<MpraceTransfer>;

static constexpr std::size_t KiB = 1024, MiB = 1024 * 1024;
static constexpr unsigned kMaxConns = 8;

// The pattern seed of each sender: the receivers check every source against its own.
static std::uint32_t seed_of(unsigned source) { return 0x1000 + 0x10000 * source; }

// The transports of the loop tests: TCP alone, and shared memory for the data (TCP still
// carries the connection set-up: UCX needs it for an address and port).
static void use_transport(int i) { setenv("UCX_TLS", i == 0 ? "tcp" : "shm,tcp", 1); }

// What a receiver process saw, sent back through a pipe.
struct RxConn {
	std::uint16_t source;
	bool ended, lost;
	std::uint64_t chunks, bytes, missing, duplicates, reordered, incomplete, end_sequence, next_sequence;
	std::uint64_t pattern_errors, wrong_route;
};
struct RxResult {
	unsigned conns;
	bool timed_out;
	RxConn conn[kMaxConns];
};

// A receiver in a child process: receives until `senders` connections have ended or were lost
// (or `limit_s` passed), checks every chunk, then reports. With `routes` > 1, every chunk's
// timeframe must be one this receiver (number `index`) is routed: timeframe % routes == index.
// UCX does not survive fork(): a receiver is forked before the test process starts UCX, and
// one that must listen later is forked `deferred` and started by go().
class RxProc {
public:
	RxProc(unsigned senders, net::ReceiverOptions o, unsigned hold_us = 0, unsigned routes = 1, unsigned index = 0,
	       double limit_s = 60, bool deferred = false)
	{
		ck_assert_int_eq(pipe(port_pipe_), 0);
		ck_assert_int_eq(pipe(go_pipe_), 0);
		ck_assert_int_eq(pipe(result_), 0);
		pid_ = fork();
		ck_assert_int_ge(pid_, 0);
		if (pid_ == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL); // a failed test leaves no receiver behind
			close(port_pipe_[0]);
			close(go_pipe_[1]);
			close(result_[0]);
			char go;
			if (deferred && read(go_pipe_[0], &go, 1) != 1)
				_exit(6);
			serve(port_pipe_[1], senders, std::move(o), hold_us, routes, index, limit_s);
		}
		close(port_pipe_[1]);
		close(go_pipe_[0]);
		close(result_[1]);
		if (!deferred)
			go();
	}
	// Makes a deferred receiver listen; returns when it does.
	void go()
	{
		ck_assert_int_eq(write(go_pipe_[1], "g", 1), 1);
		ck_assert_int_eq(read(port_pipe_[0], &port_, sizeof port_), static_cast<ssize_t>(sizeof port_));
		ck_assert_uint_ne(port_, 0);
	}
	~RxProc()
	{
		if (pid_ > 0) {
			kill(pid_, SIGKILL);
			waitpid(pid_, nullptr, 0);
		}
		close(result_[0]);
		close(port_pipe_[0]);
		close(go_pipe_[1]);
	}
	std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
	void kill_now()
	{
		kill(pid_, SIGKILL);
		waitpid(pid_, nullptr, 0);
		pid_ = -1;
	}
	RxResult result()
	{
		RxResult r{};
		std::size_t got = 0;
		while (got < sizeof r) {
			const ssize_t n = read(result_[0], reinterpret_cast<char *>(&r) + got, sizeof r - got);
			ck_assert_msg(n > 0, "the receiver process died without a result");
			got += static_cast<std::size_t>(n);
		}
		int status = 0;
		waitpid(pid_, &status, 0);
		pid_ = -1;
		ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		return r;
	}

private:
	[[noreturn]] void serve(int port_fd, unsigned senders, net::ReceiverOptions o, unsigned hold_us,
				unsigned routes, unsigned index, double limit_s)
	{
		RxResult res{};
		try {
			net::Receiver rx(std::move(o));
			const std::uint16_t port = rx.port();
			if (write(port_fd, &port, sizeof port) != sizeof port)
				_exit(3);
			close(port_fd);
			std::uint64_t bad[kMaxConns] = {}, off_route[kMaxConns] = {};
			const auto t0 = std::chrono::steady_clock::now();
			for (;;) {
				const auto conns = rx.connections();
				unsigned over = 0;
				for (const auto &c : conns)
					over += c.ended || c.lost;
				if (over >= senders && rx.pending() == 0)
					break;
				if (testbm::seconds_since(t0) > limit_s) {
					res.timed_out = true;
					break;
				}
				auto c = rx.next(std::chrono::milliseconds(50));
				if (!c)
					continue;
				if (c->connection < kMaxConns) {
					bad[c->connection] += mp_pattern_find_mismatch(c->data, c->size, c->header.offset,
										       seed_of(c->header.source)) >= 0;
					off_route[c->connection] += routes > 1 && c->header.timeframe % routes != index;
				}
				if (hold_us)
					std::this_thread::sleep_for(std::chrono::microseconds(hold_us));
				rx.release(*c);
			}
			const auto conns = rx.connections();
			res.conns = static_cast<unsigned>(std::min<std::size_t>(conns.size(), kMaxConns));
			for (unsigned i = 0; i < res.conns; ++i) {
				const auto &c = conns[i];
				res.conn[i] = RxConn{c.source, c.ended, c.lost, c.chunks, c.bytes, c.missing, c.duplicates,
						     c.reordered, c.incomplete, c.end_sequence, c.next_sequence, bad[i],
						     off_route[i]};
			}
		} catch (const std::exception &e) {
			std::fprintf(stderr, "receiver: %s\n", e.what());
			_exit(4);
		}
		if (write(result_[1], &res, sizeof res) != sizeof res)
			_exit(5);
		_exit(0);
	}

	pid_t pid_ = -1;
	int port_pipe_[2] = {-1, -1}, go_pipe_[2] = {-1, -1}, result_[2] = {-1, -1};
	std::uint16_t port_ = 0;
};

// A virtual board with its pattern generator at `seed`, feeding a Sender through a Relay.
struct BoardSender {
	mprace::Board board;
	mprace::DMAEngine engine;
	std::unique_ptr<Pipe> pipe;

	BoardSender(net::SenderOptions o, std::size_t count, std::size_t size, const char *device = "emu:link=gen3x8")
		: board(device), engine(board, engine_options())
	{
		board.setTestRouting(mprace::C2HSource::Pattern, mprace::H2CSink::Checker);
		board.setPatternRate(0);
		const unsigned source = o.source;
		net::Sender s(std::move(o));
		board.setPatternSeed(seed_of(source));
		pipe = std::make_unique<Pipe>(MpraceTransfer(board, engine, MemoryKind::user), std::move(s), count, size);
	}
	static mprace::EngineOptions engine_options()
	{
		mprace::EngineOptions o;
		o.ringEntries = 64;
		o.waitTimeout = std::chrono::milliseconds(60000);
		return o;
	}
	net::Sender &sender() { return pipe->sink(); }
};

static net::ReceiverOptions rx_options(std::size_t window = 4, std::size_t max_chunk = 1 * MiB)
{
	net::ReceiverOptions o;
	o.listen = "127.0.0.1:0";
	o.window = window;
	o.max_chunk = max_chunk;
	return o;
}

static net::SenderOptions tx_options(std::vector<std::string> to, unsigned source)
{
	net::SenderOptions o;
	o.receivers = std::move(to);
	o.source = static_cast<std::uint16_t>(source);
	return o;
}

// ------------------------------------------------------------------------------------------

START_TEST(test_net_endpoint_parse)
{
	const auto e = net::Endpoint::parse("10.0.0.2:4711");
	ck_assert_str_eq(e.host.c_str(), "10.0.0.2");
	ck_assert_uint_eq(e.port, 4711);
	const auto v6 = net::Endpoint::parse("[::1]:80");
	ck_assert_str_eq(v6.host.c_str(), "::1");
	const std::string text = v6.str();
	ck_assert_str_eq(text.c_str(), "[::1]:80");
	ck_assert(net::Endpoint::parse(":9").host.empty());
	ck_assert_uint_eq(net::Endpoint::parse("9").port, 9);
	for (const char *bad : {"", "host", "host:", "host:65536", "host:12x", "[::1", "[::1]80", "h:-1", "h:123456"})
		ck_assert_msg(error_of([&] { net::Endpoint::parse(bad); }) == EINVAL, "'%s' was accepted", bad);
}
END_TEST

START_TEST(test_net_bad_options)
{
	ck_assert_int_eq(error_of([] { net::Sender s(net::SenderOptions{}); }), EINVAL);
	auto o = tx_options({"127.0.0.1:1"}, 0);
	o.chunks_per_timeframe = 0;
	ck_assert_int_eq(error_of([&] { net::Sender s(o); }), EINVAL);
	ck_assert_int_eq(error_of([] { net::Sender s(tx_options({"127.0.0.1:0"}, 0)); }), EINVAL);
	ck_assert_int_eq(error_of([] { net::Sender s(tx_options({"nonsense"}, 0)); }), EINVAL);
	ck_assert_int_eq(error_of([] { net::Receiver r(rx_options(0)); }), EINVAL);
	ck_assert_int_eq(error_of([] { net::Receiver r(rx_options(4, 0)); }), EINVAL);
	auto ro = rx_options();
	ro.listen = "127.0.0.1:99999";
	ck_assert_int_eq(error_of([&] { net::Receiver r(ro); }), EINVAL);
	// A port that is taken: an error, not a second listener.
	net::Receiver first(rx_options());
	ro.listen = "127.0.0.1:" + std::to_string(first.port());
	ck_assert_int_ne(error_of([&] { net::Receiver r(ro); }), 0);
}
END_TEST

// Nobody listening, a name that does not resolve: errors at once, not after the timeout.
START_TEST(test_net_refused)
{
	use_transport(_i);
	std::uint16_t free_port;
	{
		net::Receiver r(rx_options()); // a port that was free a moment ago
		free_port = r.port();
	}
	auto o = tx_options({"127.0.0.1:" + std::to_string(free_port)}, 0);
	o.connect_timeout = std::chrono::seconds(30);
	const auto t0 = std::chrono::steady_clock::now();
	int e = 0;
	std::string what;
	try {
		net::Sender s(o);
	} catch (const std::system_error &x) {
		e = x.code().value();
		what = x.what();
	}
	ck_assert_msg(e == ECONNREFUSED || e == EHOSTUNREACH || e == ECONNRESET, "error %d: %s", e, what.c_str());
	ck_assert(testbm::seconds_since(t0) < 15);
	o.receivers = {"no-such-host.invalid:4000"};
	ck_assert_int_eq(error_of([&] { net::Sender s(o); }), EHOSTUNREACH);
	try {
		o.receivers = {"127.0.0.1:" + std::to_string(free_port)};
		net::Sender s(o);
		ck_abort_msg("connected to nobody");
	} catch (const std::system_error &x) {
		ck_assert_msg(std::strstr(x.what(), std::to_string(free_port).c_str()), "%s", x.what());
	}
}
END_TEST

// 2 boards -> 2 receivers, timeframes of 2 chunks routed round-robin: every byte arrives once,
// at the receiver its timeframe names, equal to the board's pattern at its offset.
START_TEST(test_net_two_by_two)
{
	use_transport(_i);
	RxProc rx0(2, rx_options(), 0, 2, 0), rx1(2, rx_options(), 0, 2, 1);
	const std::size_t total = 24 * MiB + 256 * KiB + 12; // a short last chunk
	std::atomic<int> errors{0};
	std::vector<std::thread> senders;
	std::uint64_t sent[2] = {};
	for (unsigned s = 0; s < 2; ++s)
		senders.emplace_back([&, s] {
			try {
				auto o = tx_options({rx0.address(), rx1.address()}, 7 + s);
				o.chunks_per_timeframe = 2;
				BoardSender b(o, 4, 256 * KiB);
				sent[s] = b.pipe->run(total);
			} catch (const std::exception &e) {
				std::fprintf(stderr, "sender %u: %s\n", s, e.what());
				++errors;
			}
		});
	for (auto &t : senders)
		t.join();
	ck_assert_int_eq(errors.load(), 0);
	ck_assert_uint_eq(sent[0], total);
	ck_assert_uint_eq(sent[1], total);
	std::uint64_t bytes[2] = {}, chunks[2] = {}, end_seq[2] = {};
	for (RxProc *rx : {&rx0, &rx1}) {
		const RxResult r = rx->result();
		ck_assert(!r.timed_out);
		ck_assert_uint_eq(r.conns, 2);
		for (unsigned i = 0; i < r.conns; ++i) {
			const RxConn &c = r.conn[i];
			ck_assert(c.source == 7 || c.source == 8);
			ck_assert(c.ended && !c.lost);
			ck_assert_uint_eq(c.pattern_errors, 0);
			ck_assert_uint_eq(c.wrong_route, 0);
			ck_assert_uint_eq(c.duplicates, 0);
			ck_assert_uint_eq(c.incomplete, 0);
			ck_assert_uint_eq(c.missing, 0);
			ck_assert_uint_eq(c.chunks, c.end_sequence); // every chunk sent to this receiver
			bytes[c.source - 7] += c.bytes;
			chunks[c.source - 7] += c.chunks;
			end_seq[c.source - 7] += c.end_sequence;
		}
	}
	for (unsigned s = 0; s < 2; ++s) {
		ck_assert_uint_eq(bytes[s], total);
		ck_assert_uint_eq(chunks[s], end_seq[s]);
		ck_assert_uint_gt(chunks[s], 90); // 24 MiB in 256 KiB chunks, over both receivers
	}
}
END_TEST

// A receiver that holds each chunk 3 ms with a window of 2: the sender waits for credits, the
// Relay for buffers, the board's engine stalls; every chunk still arrives, in order, intact.
START_TEST(test_net_slow_receiver)
{
	use_transport(_i);
	RxProc rx(1, rx_options(2), 3000);
	BoardSender b(tx_options({rx.address()}, 3), 4, 64 * KiB);
	const std::size_t total = 60 * 64 * KiB;
	ck_assert_uint_eq(b.pipe->run(total), total);
	const std::uint64_t waits = b.sender().stats().credit_waits;
	b.pipe.reset(); // ends the stream
	const RxResult r = rx.result();
	ck_assert_uint_eq(r.conns, 1);
	ck_assert(r.conn[0].ended);
	ck_assert_uint_eq(r.conn[0].bytes, total);
	ck_assert_uint_eq(r.conn[0].missing + r.conn[0].duplicates + r.conn[0].reordered, 0);
	ck_assert_uint_eq(r.conn[0].pattern_errors, 0);
	ck_assert_msg(waits > 30, "only %llu of 60 chunks waited for a credit", static_cast<unsigned long long>(waits));
}
END_TEST

// Receiver A killed while its sender streams: that sender's run() fails with an error naming
// the receiver, promptly; the pair B goes on to the end undisturbed.
START_TEST(test_net_receiver_killed)
{
	use_transport(_i);
	RxProc a(1, rx_options()), b(1, rx_options());
	std::atomic<bool> a_streaming{false};
	std::atomic<int> a_error{0};
	std::string a_what;
	double a_seconds_after_kill = -1;
	std::chrono::steady_clock::time_point killed_at{};
	std::atomic<bool> killed{false};
	std::thread ta([&] {
		try {
			BoardSender s(tx_options({a.address()}, 1), 4, 256 * KiB);
			for (int k = 0; k < 100000; ++k) {
				s.pipe->run(4 * MiB);
				a_streaming = true;
			}
		} catch (const std::system_error &e) {
			a_error = e.code().value();
			a_what = e.what();
			if (killed)
				a_seconds_after_kill = testbm::seconds_since(killed_at);
		}
	});
	std::uint64_t b_sent = 0;
	std::string b_error;
	std::thread tb([&] {
		try {
			BoardSender s(tx_options({b.address()}, 2), 4, 256 * KiB);
			b_sent = s.pipe->run(64 * MiB);
		} catch (const std::exception &e) {
			b_error = e.what();
		}
	});
	while (!a_streaming)
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
	killed_at = std::chrono::steady_clock::now();
	killed = true;
	a.kill_now();
	ta.join();
	tb.join();
	ck_assert_msg(a_error != 0 && a_error != ECANCELED, "error %d", a_error.load());
	ck_assert_msg(a_what.find(a.address()) != std::string::npos, "%s", a_what.c_str());
	ck_assert_msg(a_seconds_after_kill >= 0 && a_seconds_after_kill < 10, "%.1f s", a_seconds_after_kill);
	std::fprintf(stderr, "# %s: the sender's error %.3f s after the receiver was killed\n",
		     std::getenv("UCX_TLS"), a_seconds_after_kill);
	ck_assert_msg(b_error.empty(), "%s", b_error.c_str());
	ck_assert_uint_eq(b_sent, 64 * MiB);
	const RxResult r = b.result();
	ck_assert(r.conn[0].ended && !r.conn[0].lost);
	ck_assert_uint_eq(r.conn[0].bytes, 64 * MiB);
	ck_assert_uint_eq(r.conn[0].missing + r.conn[0].pattern_errors, 0);
}
END_TEST

// A receiver killed and started again at the same address: the sender's run() fails, then
// reconnect() reaches the new one and the stream goes on, intact at the new receiver (the board's
// pattern resumed at the stream offset of the next chunk).
START_TEST(test_net_receiver_restarted)
{
	use_transport(_i);
	auto a = std::make_unique<RxProc>(1, rx_options());
	const std::string address = a->address();
	auto o = rx_options();
	o.listen = address;
	RxProc b(1, o, 0, 1, 0, 60, true);
	BoardSender s(tx_options({address}, 4), 4, 256 * KiB);
	ck_assert_uint_eq(s.pipe->run(8 * MiB), 8 * MiB);
	a->kill_now();
	int e = 0;
	for (int k = 0; k < 1000 && !e; ++k)
		e = error_of([&] { s.pipe->run(1 * MiB); });
	ck_assert_int_ne(e, 0);
	ck_assert_int_ne(e, ECANCELED);
	b.go();
	ck_assert(b.address() == address);
	s.sender().reconnect();
	const std::uint64_t resume = s.sender().stream_offset();
	s.board.setPatternSeed(mp_pattern_word(seed_of(4), resume / 4));
	ck_assert_uint_eq(s.pipe->run(8 * MiB), 8 * MiB);
	s.pipe.reset(); // ends the stream
	const RxResult r = b.result();
	ck_assert_uint_eq(r.conns, 1);
	ck_assert(r.conn[0].ended && !r.conn[0].lost);
	ck_assert_uint_eq(r.conn[0].bytes, 8 * MiB);
	ck_assert_uint_eq(r.conn[0].chunks, r.conn[0].end_sequence);
	ck_assert_uint_eq(r.conn[0].missing + r.conn[0].duplicates + r.conn[0].pattern_errors, 0);
}
END_TEST

// A sender process killed mid-stream: the receiver reports the connection lost (not ended),
// and what had arrived whole is intact.
START_TEST(test_net_sender_killed)
{
	use_transport(_i);
	RxProc rx(1, rx_options());
	const pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		try {
			BoardSender s(tx_options({rx.address()}, 5), 4, 256 * KiB);
			for (;;)
				s.pipe->run(4 * MiB);
		} catch (...) {
		}
		_exit(1);
	}
	std::this_thread::sleep_for(std::chrono::milliseconds(700));
	kill(pid, SIGKILL);
	waitpid(pid, nullptr, 0);
	const RxResult r = rx.result();
	ck_assert(!r.timed_out);
	ck_assert_uint_eq(r.conns, 1);
	ck_assert(r.conn[0].lost && !r.conn[0].ended);
	ck_assert_uint_gt(r.conn[0].chunks, 0);
	ck_assert_uint_eq(r.conn[0].pattern_errors + r.conn[0].duplicates, 0);
}
END_TEST

// abort() from another thread ends a sender stalled on credits with ECANCELED; an abort while
// idle does not touch later transfers.
START_TEST(test_net_abort)
{
	net::ReceiverOptions ro = rx_options(1);
	net::Receiver rx(ro);
	std::atomic<bool> stop{false};
	std::thread serve([&] { // accepts, never releases a chunk
		while (!stop)
			rx.poll(std::chrono::milliseconds(10));
	});
	{
		net::Sender s(tx_options({"127.0.0.1:" + std::to_string(rx.port())}, 0));
		s.allocate(3, 4096);
		s.abort(Direction::h2c); // idle: harmless
		s.start(Direction::h2c, 0, 4096);
		ck_assert_uint_eq(s.wait(Direction::h2c, 0), 4096);
		s.start(Direction::h2c, 1, 4096); // no credit left: it waits
		ck_assert(!s.wait_for(Direction::h2c, 1, std::chrono::milliseconds(100)).has_value());
		std::thread aborter([&] {
			std::this_thread::sleep_for(std::chrono::milliseconds(100));
			s.abort(Direction::h2c);
		});
		const auto t0 = std::chrono::steady_clock::now();
		ck_assert_int_eq(error_of([&] { s.wait(Direction::h2c, 1); }), ECANCELED);
		ck_assert(testbm::seconds_since(t0) < 5);
		aborter.join();
		s.reset(Direction::h2c);
		ck_assert_int_eq(error_of([&] { s.start(Direction::c2h, 0, 4); }), EINVAL);
		ck_assert_int_eq(error_of([&] { s.start(Direction::h2c, 0, 4097); }), EINVAL);
		ck_assert_int_eq(error_of([&] { s.wait(Direction::h2c, 2); }), EINVAL);
	}
	stop = true;
	serve.join();
	ck_assert_uint_eq(rx.connections().size(), 1);
	ck_assert(rx.connections()[0].ended);
}
END_TEST

// Chunks larger than the receiver takes: EMSGSIZE before anything is sent. A chunk released
// twice: EINVAL.
START_TEST(test_net_limits)
{
	net::Receiver rx(rx_options(2, 64 * KiB));
	std::atomic<bool> stop{false};
	std::thread serve([&] {
		while (!stop)
			rx.poll(std::chrono::milliseconds(10));
	});
	const auto to = tx_options({"127.0.0.1:" + std::to_string(rx.port())}, 0);
	ck_assert_int_eq(error_of([&] { BoardSender b(to, 2, 128 * KiB); }), EMSGSIZE);
	{
		BoardSender b(to, 2, 64 * KiB);
		ck_assert_uint_eq(b.sender().max_chunk(), 64 * KiB);
		ck_assert_uint_eq(b.pipe->run(64 * KiB), 64 * KiB);
	}
	stop = true;
	serve.join();
	auto c = rx.next(std::chrono::milliseconds(1000));
	ck_assert(c.has_value());
	ck_assert_uint_eq(c->size, 64 * KiB);
	ck_assert_int_eq(mp_pattern_find_mismatch(c->data, c->size, c->header.offset, seed_of(0)), -1);
	rx.release(*c);
	ck_assert_int_eq(error_of([&] { rx.release(*c); }), EINVAL);
	net::Chunk forged = *c;
	forged.connection = 99;
	ck_assert_int_eq(error_of([&] { rx.release(forged); }), EINVAL);
}
END_TEST

extern "C" Suite *test_suite(void)
{
	// A receiver restarted on its port takes it again at once (docs/network.md); UCX reads
	// this when a process starts it, so before any test does.
	setenv("UCX_TCP_CM_REUSEADDR", "y", 1);
	Suite *s = suite_create("bufmgr_net");
	TCase *tc = tcase_create("net");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_net_endpoint_parse);
	tcase_add_test(tc, test_net_bad_options);
	tcase_add_loop_test(tc, test_net_refused, 0, 2);
	tcase_add_loop_test(tc, test_net_two_by_two, 0, 2);
	tcase_add_loop_test(tc, test_net_slow_receiver, 0, 2);
	tcase_add_loop_test(tc, test_net_receiver_killed, 0, 2);
	tcase_add_loop_test(tc, test_net_receiver_restarted, 0, 2);
	tcase_add_loop_test(tc, test_net_sender_killed, 0, 2);
	tcase_add_test(tc, test_net_abort);
	tcase_add_test(tc, test_net_limits);
	suite_add_tcase(s, tc);
	return s;
}
