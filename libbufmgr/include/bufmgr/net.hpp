// SPDX-License-Identifier: LGPL-2.1-or-later
//
// The network stage: board -> host -> network -> remote host, over UCX active messages
// (docs/network.md). Needs UCX (pkg-config ucx, link -lucp -lucs).
//
//   net::Sender    a Transfer (H2C only) whose "other side" is one or more remote receivers:
//                  draining buffer i sends its bytes as one chunk, straight from the DMA buffer
//                  (registered with UCX once, in allocate()/adopt()), and the buffer is free
//                  again when the send has completed. In a Relay behind the board
//                  (net::BoardToNetwork) the board fills buffer k+1 while buffer k is on the wire.
//   net::Receiver  listens on an address and port, lands every sender's chunks in its own
//                  registered host memory and hands them to the application one at a time;
//                  release() gives the memory back and returns a credit to the sender.
//
// Every chunk carries a ChunkHeader (source, sequence number, timeframe id, stream offset,
// length): a receiver counts lost, duplicated and reordered chunks per sender connection.
// Flow control is by credits: a receiver grants each sender `window` chunks; a sender posts a
// chunk only while it holds a credit for that receiver, and gets one back per released chunk.
// So a slow receiver stalls its senders' wait(), which stalls the Relay, which stalls the board's
// engine: nothing is overwritten or dropped.
#ifndef BUFMGR_NET_HPP
#define BUFMGR_NET_HPP

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ucp/api/ucp.h>

#include "bufmgr/concepts.hpp"
#include "bufmgr/error.hpp"
#include "bufmgr/memory.hpp"
#include "bufmgr/relay.hpp"

namespace bufmgr::net {

// The header in front of every chunk on the wire (the active message's header; the payload is
// the DMA buffer itself). Host byte order: sender and receiver are the same architecture.
struct ChunkHeader {
	std::uint32_t magic = 0;      // chunk_magic
	std::uint16_t version = 0;    // protocol_version
	std::uint16_t source = 0;     // SenderOptions::source
	std::uint64_t sequence = 0;   // per sender, from 0, one per chunk (over all its receivers)
	std::uint64_t link_sequence = 0; // per sender and receiver, from 0: what loss is judged by
	std::uint64_t timeframe = 0;  // the application's id for the data (SenderOptions)
	std::uint64_t offset = 0;     // bytes of the sender's stream before this chunk
	std::uint32_t length = 0;     // payload bytes
	std::uint32_t reserved = 0;
};
static_assert(sizeof(ChunkHeader) == 48, "bufmgr::net::ChunkHeader is part of the wire protocol");

inline constexpr std::uint32_t chunk_magic = 0x4e52504d; // "MPRN"
inline constexpr std::uint16_t protocol_version = 1;

// How a sender picks the receiver of a chunk among M.
enum class Route {
	round_robin, // receiver = timeframe % M: whole timeframes go to one receiver, in turn
	hash,        // receiver = a hash of the timeframe id % M (ids that are not consecutive)
};

// Where to connect or listen: "host:port", "[v6 address]:port", ":port" or "port" (listen on
// every address). Throws Error(EINVAL) for anything else.
struct Endpoint {
	std::string host;
	std::uint16_t port = 0;

	static Endpoint parse(const std::string &text)
	{
		Endpoint e;
		std::string port;
		const auto bad = [&](const char *why) {
			return Error(EINVAL, "bufmgr::net: bad address '" + text + "' (" + why +
						     "; expected host:port, [v6]:port or :port)");
		};
		if (!text.empty() && text[0] == '[') {
			const auto close = text.find(']');
			if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
				throw bad("unterminated [v6 address]");
			e.host = text.substr(1, close - 1);
			port = text.substr(close + 2);
		} else if (const auto colon = text.rfind(':'); colon != std::string::npos) {
			e.host = text.substr(0, colon);
			port = text.substr(colon + 1);
		} else {
			port = text;
		}
		if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
			throw bad("no port number");
		const unsigned long p = std::stoul(port);
		if (p > 65535)
			throw bad("port above 65535");
		e.port = static_cast<std::uint16_t>(p);
		return e;
	}
	std::string str() const
	{
		const bool v6 = host.find(':') != std::string::npos;
		return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
	}
};

namespace detail {

// The active message ids of the protocol (docs/network.md).
enum AmId : unsigned {
	am_hello = 1,   // sender -> receiver, header HelloMsg: who I am
	am_welcome = 2, // receiver -> sender, header CreditMsg: the first credits and the chunk limit
	am_credit = 3,  // receiver -> sender, header CreditMsg: more credits
	am_chunk = 4,   // sender -> receiver, header ChunkHeader, data the payload
	am_end = 5,     // sender -> receiver, header HelloMsg: the stream ends here
};

struct HelloMsg {
	std::uint32_t magic = chunk_magic;
	std::uint16_t version = protocol_version;
	std::uint16_t source = 0;
	std::uint64_t next_sequence = 0; // am_end: the chunks sent to this receiver
};

struct CreditMsg {
	std::uint32_t magic = chunk_magic;
	std::uint32_t credits = 0;
	std::uint64_t max_chunk = 0;
};

inline int errno_of(ucs_status_t s) noexcept
{
	switch (s) {
	case UCS_ERR_CONNECTION_RESET: return ECONNRESET;
	case UCS_ERR_NOT_CONNECTED: return ENOTCONN;
	case UCS_ERR_REJECTED: return ECONNREFUSED;
	case UCS_ERR_UNREACHABLE: return EHOSTUNREACH;
	case UCS_ERR_ENDPOINT_TIMEOUT:
	case UCS_ERR_TIMED_OUT: return ETIMEDOUT;
	case UCS_ERR_CANCELED: return ECANCELED;
	case UCS_ERR_NO_MEMORY: return ENOMEM;
	case UCS_ERR_INVALID_PARAM: return EINVAL;
	case UCS_ERR_BUSY: return EADDRINUSE;
	case UCS_ERR_MESSAGE_TRUNCATED:
	case UCS_ERR_EXCEEDS_LIMIT: return EMSGSIZE;
	default: return EIO;
	}
}

inline void check(ucs_status_t s, const std::string &what)
{
	if (s != UCS_OK)
		throw Error(errno_of(s), what + ": " + ucs_status_string(s));
}

// Resolves an Endpoint for ucp_ep_create / ucp_listener_create (numeric or by name).
inline sockaddr_storage resolve(const Endpoint &e, bool passive, socklen_t *len)
{
	addrinfo hints{}, *res = nullptr;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = passive ? AI_PASSIVE : 0;
	const std::string port = std::to_string(e.port);
	const int rc = getaddrinfo(e.host.empty() ? nullptr : e.host.c_str(), port.c_str(), &hints, &res);
	if (rc != 0)
		throw Error(rc == EAI_SYSTEM ? errno : EHOSTUNREACH,
			    "bufmgr::net: cannot resolve '" + e.str() + "': " + gai_strerror(rc));
	sockaddr_storage ss{};
	std::memcpy(&ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return ss;
}

// One UCX context and worker, driven by one thread (UCS_THREAD_MODE_SINGLE), which sleeps on the
// worker's event fd when there is nothing to do; interrupt() wakes it from any thread.
class Worker {
public:
	Worker()
	{
		ucp_config_t *cfg = nullptr;
		check(ucp_config_read(nullptr, nullptr, &cfg), "bufmgr::net: reading UCX's configuration");
		ucp_params_t p{};
		p.field_mask = UCP_PARAM_FIELD_FEATURES;
		p.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
		const ucs_status_t s = ucp_init(&p, cfg, &ctx_);
		ucp_config_release(cfg);
		check(s, "bufmgr::net: ucp_init");
		ucp_worker_params_t wp{};
		wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
		wp.thread_mode = UCS_THREAD_MODE_SINGLE;
		if (ucs_status_t w = ucp_worker_create(ctx_, &wp, &worker_); w != UCS_OK) {
			ucp_cleanup(ctx_);
			check(w, "bufmgr::net: ucp_worker_create");
		}
		if (ucs_status_t f = ucp_worker_get_efd(worker_, &efd_); f != UCS_OK) {
			ucp_worker_destroy(worker_);
			ucp_cleanup(ctx_);
			check(f, "bufmgr::net: ucp_worker_get_efd");
		}
	}
	Worker(const Worker &) = delete;
	Worker &operator=(const Worker &) = delete;
	~Worker()
	{
		ucp_worker_destroy(worker_);
		ucp_cleanup(ctx_);
	}

	ucp_worker_h get() const noexcept { return worker_; }
	ucp_context_h context() const noexcept { return ctx_; }

	void on_message(unsigned id, ucp_am_recv_callback_t cb, void *arg)
	{
		ucp_am_handler_param_t p{};
		p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
			       UCP_AM_HANDLER_PARAM_FIELD_ARG;
		p.id = id;
		p.cb = cb;
		p.arg = arg;
		check(ucp_worker_set_am_recv_handler(worker_, &p), "bufmgr::net: setting a message handler");
	}

	ucp_mem_h map(void *data, std::size_t size)
	{
		ucp_mem_map_params_t p{};
		p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
		p.address = data;
		p.length = size;
		ucp_mem_h h = nullptr;
		check(ucp_mem_map(ctx_, &p, &h), "bufmgr::net: registering a buffer with UCX");
		return h;
	}
	void unmap(ucp_mem_h h) noexcept
	{
		if (h)
			ucp_mem_unmap(ctx_, h);
	}

	// Any thread: wakes a progress_until() that sleeps, so that it looks at done() again.
	void wake() noexcept { ucp_worker_signal(worker_); }

	// How long progress_until() polls before it sleeps on the event fd (the Options' idle_spin).
	void set_idle_spin(std::chrono::microseconds spin) noexcept { spin_ = spin; }

	// Owning thread. Progresses the worker, calling after() after each round of progress,
	// until done() holds or the deadline passes; returns done().
	// Polls for idle_spin before it sleeps: a sleep costs a wake-up of tens of microseconds per
	// message, which a stream of chunks cannot afford.
	template <class Done, class After>
	bool progress_until(Done done, After after, std::chrono::steady_clock::time_point deadline)
	{
		using clock = std::chrono::steady_clock;
		auto spin_end = clock::now() + spin_;
		for (;;) {
			while (ucp_worker_progress(worker_) != 0) {
			}
			after();
			if (done())
				return true;
			const auto now = clock::now();
			if (now >= deadline)
				return false;
			if (now < spin_end)
				continue;
			if (ucp_worker_arm(worker_) == UCS_ERR_BUSY)
				continue;
			const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
			pollfd pfd{efd_, POLLIN, 0};
			poll(&pfd, 1, static_cast<int>(std::min<long long>(left + 1, 100)));
			spin_end = clock::now() + spin_;
		}
	}

	// Closes an endpoint and waits (at most `limit`) until UCX has let go of it; force skips
	// the flush of what is still queued (for a peer that is gone).
	void close(ucp_ep_h ep, bool force, std::chrono::milliseconds limit) noexcept
	{
		if (!ep)
			return;
		ucp_request_param_t p{};
		p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
		p.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
		ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &p);
		if (r == nullptr || UCS_PTR_IS_ERR(r))
			return;
		const auto deadline = std::chrono::steady_clock::now() + limit;
		while (ucp_request_check_status(r) == UCS_INPROGRESS &&
		       std::chrono::steady_clock::now() < deadline)
			ucp_worker_progress(worker_);
		ucp_request_free(r); // one still in progress is released by UCX when it ends
	}

private:
	ucp_context_h ctx_ = nullptr;
	ucp_worker_h worker_ = nullptr;
	int efd_ = -1;
	std::chrono::microseconds spin_{1000};
};

// A small message with its header kept alive until UCX has sent it (UCX 1.13 does not copy
// an active message's header): freed by the completion callback, or at once when the send
// completed inline.
template <class Msg>
void send_small(ucp_ep_h ep, unsigned id, const Msg &m)
{
	auto *copy = new Msg(m); // owned by UCX's request until on_done
	ucp_request_param_t p{};
	p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
	p.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
	p.user_data = copy;
	p.cb.send = [](void *req, ucs_status_t, void *user) {
		delete static_cast<Msg *>(user);
		ucp_request_free(req);
	};
	ucs_status_ptr_t r = ucp_am_send_nbx(ep, id, copy, sizeof(Msg), nullptr, 0, &p);
	if (r == nullptr || UCS_PTR_IS_ERR(r))
		delete copy;
}

template <class Msg>
bool read_msg(const void *header, std::size_t length, Msg *out)
{
	if (length != sizeof(Msg))
		return false;
	std::memcpy(out, header, sizeof(Msg));
	return out->magic == chunk_magic;
}

} // namespace detail

// ---------------------------------------------------------------------------------------------
// Sender

struct SenderOptions {
	std::vector<std::string> receivers; // Endpoint texts, one per receiver (at least one)
	std::uint16_t source = 0;           // this sender's id in every ChunkHeader
	Route route = Route::round_robin;
	// Overrides `route`: the receiver index (< M) of a chunk, from its header.
	std::function<std::size_t(const ChunkHeader &, std::size_t receivers)> route_fn;
	// Consecutive chunks that form one timeframe (the header's timeframe is chunk number /
	// this); a timeframe goes to one receiver.
	std::uint64_t chunks_per_timeframe = 1;
	std::chrono::milliseconds connect_timeout{5000};
	// reset() waits this long for sends that are still on the wire before it closes their
	// connections by force (UCX must not read a buffer after reset() returned).
	std::chrono::milliseconds drain_timeout{2000};
	// How long a waiting call polls UCX before it sleeps: longer saves wake-ups (tens of
	// microseconds each) in a stream, shorter saves CPU time when the stream pauses.
	std::chrono::microseconds idle_spin{1000};
};

// Counters of a Sender (what it did, not what arrived).
struct SenderStats {
	std::uint64_t chunks = 0, bytes = 0;
	std::uint64_t credit_waits = 0; // chunks that had to wait for a credit (back-pressure)
};

// Sender: the network as a Transfer policy (bufmgr/concepts.hpp), H2C only.
// Policies: models Transfer with can_h2c, wait_for() and adopt(); granule() is 1.
// Requirements: every receiver is listening when the Sender is constructed (the constructor
// connects to all of them and waits for their first credits, up to connect_timeout).
// Errors (bufmgr::Error): EINVAL bad options or address; ECONNREFUSED, EHOSTUNREACH or
// ETIMEDOUT when a receiver cannot be reached; EMSGSIZE a chunk larger than a receiver takes;
// ECONNRESET (or what UCX reports) from wait() once the chunk's receiver has gone: then every
// later chunk routed to it fails the same way, while chunks to the other receivers go on;
// ECANCELED after abort().
// Threads: as the concept; abort() from any thread.
class Sender {
public:
	static constexpr bool can_c2h = false;
	static constexpr bool can_h2c = true;

	explicit Sender(SenderOptions o) : core_(std::make_unique<Core>(std::move(o))) {}
	Sender(Sender &&) noexcept = default;
	Sender &operator=(Sender &&) noexcept = default;
	// Ends the stream (an am_end to every receiver still there), then closes.
	~Sender() = default;

	std::size_t granule() const noexcept { return 1; }
	std::size_t receiver_count() const noexcept { return core_->peers.size(); }
	const SenderStats &stats() const noexcept { return core_->stats; }
	// The stream offset the next chunk will carry (bytes started so far). After a failure the
	// source may have produced data that was never started: a source that can resume (a
	// pattern generator, a file) starts again from here.
	std::uint64_t stream_offset() const noexcept { return core_->offset; }
	// The largest chunk every receiver takes.
	std::size_t max_chunk() const noexcept { return core_->max_chunk(); }

	void allocate(std::size_t count, std::size_t size)
	{
		if (count == 0 || size == 0)
			throw Error(EINVAL, "bufmgr::net::Sender: need >= 1 buffer of >= 1 byte");
		core_->release_buffers();
		std::vector<BufferView> v;
		for (std::size_t i = 0; i < count; ++i) {
			core_->owned.emplace_back(size);
			v.push_back(BufferView{core_->owned.back().data(), size, MemoryKind::host});
		}
		core_->register_buffers(v.data(), v.size());
	}
	void adopt(const BufferView *views, std::size_t count)
	{
		core_->release_buffers();
		core_->register_buffers(views, count);
	}
	std::size_t buffer_count() const noexcept { return core_->slots.size(); }
	std::size_t buffer_size() const noexcept { return core_->slots.empty() ? 0 : core_->slots[0].view.size; }
	BufferView view(std::size_t i) const { return core_->slots.at(i).view; }

	void start(Direction d, std::size_t i, std::size_t n) { core_->start(d, i, n); }
	std::size_t wait(Direction d, std::size_t i)
	{
		return *core_->wait(d, i, std::chrono::steady_clock::time_point::max());
	}
	std::optional<std::size_t> wait_for(Direction d, std::size_t i, std::chrono::microseconds timeout)
	{
		return core_->wait(d, i, std::chrono::steady_clock::now() + timeout);
	}
	void abort(Direction) noexcept
	{
		core_->aborts.fetch_add(1, std::memory_order_acq_rel);
		core_->worker.wake();
	}
	void reset(Direction) noexcept { core_->reset(); }

	// Driving thread: ends the stream now (am_end to every receiver, flushed); later sends fail.
	void finish() { core_->finish(); }

	// Driving thread, nothing in flight (after reset(), which a Relay has done when its run()
	// threw): connects anew to every receiver whose connection failed (a receiver restarted at
	// the same address), as the constructor does; the others keep theirs. The stream goes on:
	// sequence numbers and offsets continue, the new connection's link sequence starts at 0.
	// Throws as the constructor when one cannot be reached (then call it again later).
	void reconnect()
	{
		if (core_->finished)
			throw Error(EPIPE, "bufmgr::net::Sender::reconnect: the stream was finished");
		core_->connect(true);
	}

private:
	struct Core;
	struct Slot {
		BufferView view;
		ucp_mem_h memh = nullptr;
		ChunkHeader header;
		enum State { idle, waiting, posted, done, failed } state = idle;
		std::size_t peer = 0;
		ucs_status_t status = UCS_OK;
		std::uint64_t aborts_at_start = 0; // an abort() after start() cancels it
		void *request = nullptr;
		Core *core = nullptr;
	};
	struct Peer {
		Endpoint where;
		ucp_ep_h ep = nullptr;
		bool welcomed = false;
		std::size_t credits = 0, max_chunk = 0;
		ucs_status_t failed = UCS_OK;
		std::deque<std::size_t> waiting; // slots waiting for a credit, in start() order
		std::size_t posted = 0;
		std::uint64_t link_sequence = 0; // chunks started for this receiver
		Core *core = nullptr;
	};

	struct Core {
		SenderOptions opt;
		// Declared before the worker, so that they outlive it: UCX's callbacks point into them.
		std::vector<std::unique_ptr<Peer>> peers;
		std::deque<Slot> slots; // stable addresses
		std::deque<HostMemory> owned;
		detail::Worker worker;
		std::atomic<std::uint64_t> aborts{0};
		std::uint64_t next_sequence = 0, chunks = 0, offset = 0;
		bool finished = false;
		SenderStats stats;

		explicit Core(SenderOptions o) : opt(std::move(o))
		{
			if (opt.receivers.empty())
				throw Error(EINVAL, "bufmgr::net::Sender: no receiver given");
			if (opt.chunks_per_timeframe == 0)
				throw Error(EINVAL, "bufmgr::net::Sender: chunks_per_timeframe must be >= 1");
			for (const auto &r : opt.receivers) {
				auto p = std::make_unique<Peer>();
				p->where = Endpoint::parse(r);
				if (p->where.port == 0)
					throw Error(EINVAL, "bufmgr::net::Sender: receiver '" + r + "' has port 0");
				p->core = this;
				peers.push_back(std::move(p));
			}
			worker.set_idle_spin(opt.idle_spin);
			worker.on_message(detail::am_welcome, &Core::on_credit, this);
			worker.on_message(detail::am_credit, &Core::on_credit, this);
			try {
				connect();
			} catch (...) {
				close_all(true);
				throw;
			}
		}
		Core(const Core &) = delete;
		Core &operator=(const Core &) = delete;
		~Core()
		{
			try {
				finish();
			} catch (...) { // a receiver that is gone: nothing to tell it
			}
			reset();
			close_all(false);
			release_buffers();
		}

		std::size_t max_chunk() const noexcept
		{
			std::size_t m = SIZE_MAX;
			for (const auto &p : peers)
				m = std::min(m, p->max_chunk);
			return m;
		}

		// Connects to every receiver (again_only: only to those whose connection failed, each a
		// new connection whose link sequence starts at 0) and waits for their first credits.
		void connect(bool again_only = false)
		{
			for (auto &p : peers) {
				if (again_only) {
					if (p->failed == UCS_OK && p->ep)
						continue;
					worker.close(std::exchange(p->ep, nullptr), true, std::chrono::milliseconds(1000));
					p->welcomed = false;
					p->credits = p->max_chunk = 0;
					p->failed = UCS_OK;
					p->link_sequence = 0;
				}
				socklen_t len = 0;
				sockaddr_storage ss = detail::resolve(p->where, false, &len);
				ucp_ep_params_t ep{};
				ep.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
						UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
				ep.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
				ep.sockaddr.addr = reinterpret_cast<const sockaddr *>(&ss);
				ep.sockaddr.addrlen = len;
				ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
				ep.err_handler.cb = &Core::on_ep_error;
				ep.err_handler.arg = p.get();
				detail::check(ucp_ep_create(worker.get(), &ep, &p->ep),
					      "bufmgr::net::Sender: connecting to " + p->where.str());
				detail::HelloMsg h;
				h.source = opt.source;
				detail::send_small(p->ep, detail::am_hello, h);
			}
			const auto deadline = std::chrono::steady_clock::now() + opt.connect_timeout;
			const bool all = worker.progress_until(
				[&] {
					return std::all_of(peers.begin(), peers.end(), [](const auto &p) {
						return p->welcomed || p->failed != UCS_OK;
					});
				},
				[] {}, deadline);
			for (auto &p : peers) {
				if (p->failed != UCS_OK) {
					// UCX names a refusal in several ways (reset, not connected, I/O error)
					int e = detail::errno_of(p->failed);
					if (e == ECONNRESET || e == ENOTCONN || e == EIO)
						e = ECONNREFUSED;
					const char *tls = std::getenv("UCX_TLS");
					const bool no_tcp = tls && !std::strstr(tls, "tcp") && !std::strstr(tls, "all");
					throw Error(e, "bufmgr::net::Sender: cannot connect to " + p->where.str() + ": " +
							       ucs_status_string(p->failed) +
							       (no_tcp ? " (UCX_TLS has no tcp: UCX needs it to connect by address)"
								       : " (is a receiver listening there?)"));
				}
				if (!p->welcomed)
					throw Error(all ? ECANCELED : ETIMEDOUT,
						    "bufmgr::net::Sender: no answer from " + p->where.str() + " within " +
							    std::to_string(opt.connect_timeout.count()) + " ms");
			}
		}

		void register_buffers(const BufferView *views, std::size_t count)
		{
			if (!views || count == 0)
				throw Error(EINVAL, "bufmgr::net::Sender: adopt needs >= 1 buffer");
			for (std::size_t i = 0; i < count; ++i)
				if (views[i].size > max_chunk())
					throw Error(EMSGSIZE, "bufmgr::net::Sender: " + std::to_string(views[i].size) +
								      "-byte buffers, but a receiver takes chunks of at most " +
								      std::to_string(max_chunk()) + " bytes");
			for (std::size_t i = 0; i < count; ++i) {
				Slot s;
				s.view = views[i];
				s.core = this;
				slots.push_back(s);
				slots.back().memh = worker.map(views[i].data, views[i].size);
			}
		}
		void release_buffers() noexcept
		{
			reset();
			for (auto &s : slots)
				worker.unmap(s.memh);
			slots.clear();
			owned.clear();
		}

		std::size_t route(const ChunkHeader &h) const
		{
			const std::size_t m = peers.size();
			if (opt.route_fn) {
				const std::size_t r = opt.route_fn(h, m);
				if (r >= m)
					throw Error(EINVAL, "bufmgr::net::Sender: route_fn chose receiver " +
								    std::to_string(r) + " of " + std::to_string(m));
				return r;
			}
			if (opt.route == Route::hash) {
				std::uint64_t x = h.timeframe; // splitmix64's finaliser: neighbours spread out
				x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
				x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
				return static_cast<std::size_t>((x ^ (x >> 31)) % m);
			}
			return static_cast<std::size_t>(h.timeframe % m);
		}

		void start(Direction d, std::size_t i, std::size_t n)
		{
			if (d != Direction::h2c)
				throw Error(EINVAL, "bufmgr::net::Sender: sends only (H2C); it cannot fill a buffer");
			Slot &s = slots.at(i);
			if (s.state == Slot::waiting || s.state == Slot::posted)
				throw Error(EBUSY, "bufmgr::net::Sender::start: buffer already queued");
			if (n == 0 || n > s.view.size)
				throw Error(EINVAL, "bufmgr::net::Sender::start: " + std::to_string(n) +
							    " bytes of a " + std::to_string(s.view.size) + "-byte buffer");
			if (finished)
				throw Error(EPIPE, "bufmgr::net::Sender: the stream was finished");
			ChunkHeader h;
			h.magic = chunk_magic;
			h.version = protocol_version;
			h.source = opt.source;
			h.sequence = next_sequence;
			h.timeframe = chunks / opt.chunks_per_timeframe;
			h.offset = offset;
			h.length = static_cast<std::uint32_t>(n);
			const std::size_t r = route(h);
			Peer &p = *peers[r];
			if (n > p.max_chunk || n > UINT32_MAX)
				throw Error(EMSGSIZE, "bufmgr::net::Sender: a " + std::to_string(n) + "-byte chunk, but " +
							      p.where.str() + " takes at most " + std::to_string(p.max_chunk));
			h.link_sequence = p.link_sequence++;
			++next_sequence;
			++chunks;
			offset += n;
			s.header = h;
			s.peer = r;
			s.status = UCS_OK;
			s.aborts_at_start = aborts.load(std::memory_order_acquire);
			if (p.failed != UCS_OK) {
				s.state = Slot::failed;
				s.status = p.failed;
				return;
			}
			s.state = Slot::waiting;
			if (p.credits == 0 || !p.waiting.empty())
				++stats.credit_waits;
			p.waiting.push_back(i);
			pump();
		}

		// Posts every waiting chunk that has a credit (called after each round of progress:
		// the credit handler only counts, as UCX's callbacks should not send).
		void pump()
		{
			for (auto &pp : peers) {
				Peer &p = *pp;
				while (!p.waiting.empty() && (p.credits > 0 || p.failed != UCS_OK)) {
					Slot &s = slots[p.waiting.front()];
					p.waiting.pop_front();
					if (p.failed != UCS_OK) {
						s.state = Slot::failed;
						s.status = p.failed;
						continue;
					}
					--p.credits;
					post(p, s);
				}
			}
		}

		void post(Peer &p, Slot &s)
		{
			ucp_request_param_t rp{};
			rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
					  UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_MEMH;
			rp.flags = UCP_AM_SEND_FLAG_REPLY;
			rp.user_data = &s;
			rp.memh = s.memh;
			rp.cb.send = &Core::on_sent;
			s.state = Slot::posted;
			ucs_status_ptr_t r = ucp_am_send_nbx(p.ep, detail::am_chunk, &s.header, sizeof(ChunkHeader),
							     s.view.data, s.header.length, &rp);
			if (r == nullptr) {
				s.state = Slot::done;
				count_sent(s);
			} else if (UCS_PTR_IS_ERR(r)) {
				s.state = Slot::failed;
				s.status = UCS_PTR_STATUS(r);
			} else {
				s.request = r;
				++p.posted;
			}
		}
		void count_sent(const Slot &s)
		{
			++stats.chunks;
			stats.bytes += s.header.length;
		}

		std::optional<std::size_t> wait(Direction d, std::size_t i, std::chrono::steady_clock::time_point deadline)
		{
			if (d != Direction::h2c)
				throw Error(EINVAL, "bufmgr::net::Sender: sends only (H2C)");
			Slot &s = slots.at(i);
			if (s.state == Slot::idle)
				throw Error(EINVAL, "bufmgr::net::Sender::wait: buffer was not started");
			const auto cancelled = [&] { return aborts.load(std::memory_order_acquire) != s.aborts_at_start; };
			const auto over = [&] { return s.state == Slot::done || s.state == Slot::failed || cancelled(); };
			if (!worker.progress_until(over, [&] { pump(); }, deadline))
				return std::nullopt;
			if (s.state != Slot::done && s.state != Slot::failed)
				throw Error(ECANCELED, "bufmgr::net::Sender: aborted"); // reset() reclaims it
			const Peer &p = *peers[s.peer];
			if (s.state == Slot::failed) {
				s.state = Slot::idle;
				if (p.failed != UCS_OK)
					s.status = p.failed; // UCX cancels what was in flight to a peer that failed
				throw Error(detail::errno_of(s.status),
					    "bufmgr::net::Sender: chunk " + std::to_string(s.header.sequence) + " to " +
						    p.where.str() + " failed: " + ucs_status_string(s.status) +
						    (p.failed != UCS_OK ? " (the receiver is gone)" : ""));
			}
			s.state = Slot::idle;
			return s.header.length;
		}

		// Forgets what is queued; waits until UCX no longer reads any buffer (closing by force
		// the connections whose sends do not finish within drain_timeout).
		void reset() noexcept
		{
			for (auto &p : peers) {
				for (std::size_t i : p->waiting)
					slots[i].state = Slot::idle;
				p->waiting.clear();
			}
			const auto none_posted = [&] {
				return std::all_of(peers.begin(), peers.end(), [](const auto &p) { return p->posted == 0; });
			};
			try {
				if (!worker.progress_until(none_posted, [] {},
							   std::chrono::steady_clock::now() + opt.drain_timeout)) {
					for (auto &p : peers)
						if (p->posted) {
							p->failed = UCS_ERR_CANCELED;
							worker.close(std::exchange(p->ep, nullptr), true,
								     std::chrono::milliseconds(1000));
						}
					worker.progress_until(none_posted, [] {},
							      std::chrono::steady_clock::now() + std::chrono::seconds(1));
				}
			} catch (...) {
			}
			for (auto &s : slots)
				if (s.state != Slot::posted)
					s.state = Slot::idle;
		}

		void finish()
		{
			if (finished)
				return;
			finished = true;
			for (auto &p : peers) {
				if (!p->ep || p->failed != UCS_OK)
					continue;
				detail::HelloMsg h;
				h.source = opt.source;
				h.next_sequence = p->link_sequence;
				detail::send_small(p->ep, detail::am_end, h);
			}
		}

		void close_all(bool force) noexcept
		{
			for (auto &p : peers)
				worker.close(std::exchange(p->ep, nullptr), force || p->failed != UCS_OK,
					     std::chrono::milliseconds(2000));
		}

		static ucs_status_t on_credit(void *arg, const void *header, std::size_t header_length, void *,
					      std::size_t, const ucp_am_recv_param_t *param)
		{
			auto *c = static_cast<Core *>(arg);
			detail::CreditMsg m;
			if (!detail::read_msg(header, header_length, &m) || !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP))
				return UCS_OK; // not ours: ignore
			for (auto &p : c->peers)
				if (p->ep == param->reply_ep) {
					p->credits += m.credits;
					if (!p->welcomed) {
						p->welcomed = true;
						p->max_chunk = static_cast<std::size_t>(m.max_chunk);
					}
				}
			return UCS_OK;
		}
		static void on_ep_error(void *arg, ucp_ep_h, ucs_status_t status)
		{
			auto *p = static_cast<Peer *>(arg);
			if (p->failed == UCS_OK)
				p->failed = status;
		}
		static void on_sent(void *request, ucs_status_t status, void *user)
		{
			auto *s = static_cast<Slot *>(user);
			Peer &p = *s->core->peers[s->peer];
			--p.posted;
			s->request = nullptr;
			if (status == UCS_OK) {
				s->state = Slot::done;
				s->core->count_sent(*s);
			} else {
				s->state = Slot::failed;
				s->status = status;
			}
			ucp_request_free(request);
		}
	};

	std::unique_ptr<Core> core_;
};

// ---------------------------------------------------------------------------------------------
// Receiver

// The limits of ReceiverOptions (a chunk's length is 32 bits in its header).
inline constexpr std::size_t max_window = 1024;
inline constexpr std::size_t max_chunk_limit = UINT32_MAX;

struct ReceiverOptions {
	std::string listen = ":0";                 // Endpoint text; port 0 picks a free port (port())
	std::size_t window = 8;                    // credits per sender: its chunks in flight (1..max_window)
	std::size_t max_chunk = std::size_t(4) << 20; // the largest chunk accepted
	std::chrono::microseconds idle_spin{1000}; // as SenderOptions::idle_spin
};

// One chunk handed to the application: its header and its payload in the receiver's memory,
// valid until release().
struct Chunk {
	ChunkHeader header;
	const std::byte *data = nullptr;
	std::size_t size = 0;
	std::size_t connection = 0; // index into Receiver::connections()
	std::size_t slot = 0;
};

// What a receiver knows about one sender connection.
struct ConnectionStats {
	std::uint16_t source = 0;
	bool identified = false;   // the sender said who it is
	bool ended = false;        // the sender ended its stream (am_end)
	bool lost = false;         // the connection failed before an end
	std::string error;         // why, when lost
	std::uint64_t chunks = 0, bytes = 0;
	// Loss is judged by the link sequence (the sender's count of chunks to this receiver):
	std::uint64_t next_sequence = 0; // the link sequence number expected next
	std::uint64_t missing = 0;       // link sequence numbers skipped (and not seen late)
	std::uint64_t duplicates = 0, reordered = 0;
	std::uint64_t end_sequence = 0;  // with ended: the chunks the sender sent to this receiver
	std::uint64_t incomplete = 0;    // chunks whose data did not arrive whole (connection lost)
};

// Receiver: accepts any number of senders on one address. A receiver started again at once on
// the port of one that died finds it taken while the old connections linger (TCP's TIME_WAIT)
// unless UCX_TCP_CM_REUSEADDR=y is in the environment when the process starts (mprace-recv
// sets it); UCX reads it once, so the library cannot set it for you.
// Requirements: one thread calls everything but interrupt().
// Errors (bufmgr::Error): EINVAL bad options; EADDRINUSE or what UCX reports when it cannot
// listen. A sender's bad behaviour (a chunk over max_chunk, more chunks than credits, a bad
// header) closes that connection and is reported in its ConnectionStats, not thrown.
class Receiver {
public:
	explicit Receiver(ReceiverOptions o) : core_(std::make_unique<Core>(std::move(o))) {}
	Receiver(Receiver &&) noexcept = default;
	Receiver &operator=(Receiver &&) noexcept = default;
	~Receiver() = default;

	// The port it listens on (the one chosen for port 0).
	std::uint16_t port() const noexcept { return core_->port; }
	// The largest chunk it takes (ReceiverOptions::max_chunk): each of its slots holds this much.
	std::size_t max_chunk() const noexcept { return core_->opt.max_chunk; }

	// Waits up to `timeout` for the next whole chunk (in arrival order per connection);
	// std::nullopt when none came or interrupt() was called.
	std::optional<Chunk> next(std::chrono::milliseconds timeout) { return core_->next(timeout); }
	// Gives a chunk's memory back and its credit to the sender (if still connected).
	void release(const Chunk &c) { core_->release(c); }
	// Progresses (accepts, receives into free memory) without handing anything out.
	void poll(std::chrono::milliseconds timeout) { core_->progress(timeout); }
	// Any thread: makes a next() in progress (or the next one) return std::nullopt.
	void interrupt() noexcept
	{
		core_->interrupted.store(true, std::memory_order_release);
		core_->worker.wake();
	}

	std::vector<ConnectionStats> connections() const
	{
		std::vector<ConnectionStats> v;
		for (const auto &c : core_->conns)
			v.push_back(c->stats);
		return v;
	}
	// Chunks that have arrived (or are arriving) and were not handed out by next() yet.
	std::size_t pending() const noexcept
	{
		std::size_t n = 0;
		for (const auto &c : core_->conns)
			n += c->arriving.size();
		return n;
	}
	// True once some sender has connected and every connection has ended or been lost with
	// nothing left to hand out: the end of a run.
	bool drained() const noexcept { return !core_->conns.empty() && active() == 0 && pending() == 0; }
	// Connections whose stream has not ended or been lost.
	std::size_t active() const noexcept
	{
		std::size_t n = 0;
		for (const auto &c : core_->conns)
			n += !c->stats.ended && !c->stats.lost;
		return n;
	}

private:
	struct Core;
	struct Conn;
	struct Arrival {
		Conn *conn = nullptr;
		ChunkHeader header;
		std::size_t slot = 0;
		bool complete = false, failed = false;
	};
	struct Conn {
		Core *core = nullptr;
		std::size_t index = 0;
		ucp_ep_h ep = nullptr;
		ConnectionStats stats;
		std::vector<HostMemory> memory;
		std::vector<ucp_mem_h> memh;
		std::vector<std::size_t> free_slots;
		std::deque<std::unique_ptr<Arrival>> arriving; // arrival order
		std::vector<std::uint64_t> gaps;               // skipped sequence numbers (bounded)
	};

	struct Core {
		ReceiverOptions opt;
		// Declared before the worker, so that they outlive it: UCX's callbacks point into them.
		std::vector<std::unique_ptr<Conn>> conns;
		std::deque<ucp_conn_request_h> requests;
		std::vector<Conn *> dropped; // lost connections whose endpoint is still to be closed
		detail::Worker worker;
		ucp_listener_h listener = nullptr;
		std::uint16_t port = 0;
		std::size_t rotate = 0;
		std::atomic<bool> interrupted{false};

		explicit Core(ReceiverOptions o) : opt(std::move(o))
		{
			if (opt.window == 0 || opt.window > max_window)
				throw Error(EINVAL, "bufmgr::net::Receiver: window must be 1..1024 chunks");
			if (opt.max_chunk == 0 || opt.max_chunk > max_chunk_limit)
				throw Error(EINVAL, "bufmgr::net::Receiver: max_chunk must be 1 byte .. 4 GiB - 1");
			const Endpoint e = Endpoint::parse(opt.listen);
			worker.set_idle_spin(opt.idle_spin);
			worker.on_message(detail::am_hello, &Core::on_hello, this);
			worker.on_message(detail::am_chunk, &Core::on_chunk, this);
			worker.on_message(detail::am_end, &Core::on_end, this);
			socklen_t len = 0;
			sockaddr_storage ss = detail::resolve(e, true, &len);
			ucp_listener_params_t lp{};
			lp.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
			lp.sockaddr.addr = reinterpret_cast<const sockaddr *>(&ss);
			lp.sockaddr.addrlen = len;
			lp.conn_handler.cb = &Core::on_conn_request;
			lp.conn_handler.arg = this;
			detail::check(ucp_listener_create(worker.get(), &lp, &listener),
				      "bufmgr::net::Receiver: cannot listen on " + e.str());
			ucp_listener_attr_t la{};
			la.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
			if (ucp_listener_query(listener, &la) == UCS_OK) {
				const auto *sa = reinterpret_cast<const sockaddr *>(&la.sockaddr);
				port = ntohs(sa->sa_family == AF_INET6
						     ? reinterpret_cast<const sockaddr_in6 *>(sa)->sin6_port
						     : reinterpret_cast<const sockaddr_in *>(sa)->sin_port);
			}
		}
		Core(const Core &) = delete;
		Core &operator=(const Core &) = delete;
		~Core()
		{
			for (ucp_conn_request_h r : requests)
				ucp_listener_reject(listener, r);
			ucp_listener_destroy(listener);
			for (auto &c : conns) {
				worker.close(std::exchange(c->ep, nullptr), c->stats.lost, std::chrono::milliseconds(1000));
				// data that may still be landing: let UCX finish with the memory first
				for (auto &a : c->arriving)
					if (!a->complete)
						a->failed = true;
			}
			while (ucp_worker_progress(worker.get()) != 0) {
			}
			for (auto &c : conns)
				for (ucp_mem_h h : c->memh)
					worker.unmap(h);
		}

		// Accepts pending connections (outside UCX's callbacks).
		void accept()
		{
			while (!requests.empty()) {
				ucp_conn_request_h r = requests.front();
				requests.pop_front();
				auto c = std::make_unique<Conn>();
				c->core = this;
				c->index = conns.size();
				ucp_ep_params_t ep{};
				ep.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
						UCP_EP_PARAM_FIELD_ERR_HANDLER;
				ep.conn_request = r;
				ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
				ep.err_handler.cb = &Core::on_ep_error;
				ep.err_handler.arg = c.get();
				if (ucp_ep_create(worker.get(), &ep, &c->ep) != UCS_OK)
					continue; // the sender sees its connection fail
				conns.push_back(std::move(c));
			}
		}

		void progress(std::chrono::milliseconds timeout)
		{
			worker.progress_until([&] { return interrupted.exchange(false); }, [&] { accept(); close_dropped(); },
					      std::chrono::steady_clock::now() + timeout);
		}

		Arrival *ready_head()
		{
			for (std::size_t k = 0; k < conns.size(); ++k) {
				Conn &c = *conns[(rotate + k) % conns.size()];
				while (!c.arriving.empty() && c.arriving.front()->failed) {
					++c.stats.incomplete;
					c.arriving.pop_front(); // its memory is not given back: the connection is gone
				}
				if (!c.arriving.empty() && c.arriving.front()->complete) {
					rotate = (rotate + k + 1) % conns.size();
					return c.arriving.front().get();
				}
			}
			return nullptr;
		}

		std::optional<Chunk> next(std::chrono::milliseconds timeout)
		{
			Arrival *a = nullptr;
			worker.progress_until([&] { return (a = ready_head()) != nullptr || interrupted.exchange(false); },
					      [&] { accept(); close_dropped(); }, std::chrono::steady_clock::now() + timeout);
			if (!a)
				return std::nullopt;
			Conn &c = *a->conn;
			Chunk out;
			out.header = a->header;
			out.data = c.memory[a->slot].data();
			out.size = a->header.length;
			out.connection = c.index;
			out.slot = a->slot;
			account(c, a->header);
			c.arriving.pop_front();
			return out;
		}

		// Sequence bookkeeping of one delivered chunk.
		static void account(Conn &c, const ChunkHeader &h)
		{
			ConnectionStats &s = c.stats;
			++s.chunks;
			s.bytes += h.length;
			const std::uint64_t q = h.link_sequence;
			if (q == s.next_sequence) {
				++s.next_sequence;
			} else if (q > s.next_sequence) {
				s.missing += q - s.next_sequence;
				for (std::uint64_t k = s.next_sequence; k < q && c.gaps.size() < 4096; ++k)
					c.gaps.push_back(k);
				s.next_sequence = q + 1;
			} else if (auto it = std::find(c.gaps.begin(), c.gaps.end(), q); it != c.gaps.end()) {
				c.gaps.erase(it);
				--s.missing;
				++s.reordered;
			} else {
				++s.duplicates;
			}
		}

		void release(const Chunk &ch)
		{
			if (ch.connection >= conns.size() || ch.slot >= conns[ch.connection]->memory.size())
				throw Error(EINVAL, "bufmgr::net::Receiver::release: not a chunk of this receiver");
			Conn &c = *conns[ch.connection];
			if (std::find(c.free_slots.begin(), c.free_slots.end(), ch.slot) != c.free_slots.end())
				throw Error(EINVAL, "bufmgr::net::Receiver::release: chunk released twice");
			c.free_slots.push_back(ch.slot);
			if (c.ep && !c.stats.lost) {
				detail::CreditMsg m;
				m.credits = 1;
				m.max_chunk = opt.max_chunk;
				detail::send_small(c.ep, detail::am_credit, m);
			}
		}

		Conn *find(const ucp_am_recv_param_t *param)
		{
			if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP))
				return nullptr;
			for (auto &c : conns)
				if (c->ep == param->reply_ep)
					return c.get();
			return nullptr;
		}

		// A sender that broke the protocol: its connection is closed and the reason kept.
		// Its endpoint is closed outside UCX's callbacks (close_dropped()): a sender that broke
		// the protocol learns so, one that is gone releases what UCX holds for it.
		void drop(Conn &c, const std::string &why)
		{
			if (!c.stats.lost) {
				c.stats.lost = true;
				c.stats.error = why;
				dropped.push_back(&c);
			}
		}
		void close_dropped() noexcept
		{
			for (Conn *c : dropped)
				worker.close(std::exchange(c->ep, nullptr), true, std::chrono::milliseconds(100));
			dropped.clear();
		}

		static void on_conn_request(ucp_conn_request_h r, void *arg)
		{
			static_cast<Core *>(arg)->requests.push_back(r);
		}
		static void on_ep_error(void *arg, ucp_ep_h, ucs_status_t status)
		{
			auto *c = static_cast<Conn *>(arg);
			if (!c->stats.ended)
				c->core->drop(*c, std::string("connection lost: ") + ucs_status_string(status));
			else if (c->ep) // a sender that ended and closed: only its endpoint to close
				c->core->dropped.push_back(c);
		}
		static ucs_status_t on_hello(void *arg, const void *header, std::size_t header_length, void *,
					     std::size_t, const ucp_am_recv_param_t *param)
		{
			auto *core = static_cast<Core *>(arg);
			Conn *c = core->find(param);
			detail::HelloMsg h;
			if (!c || c->stats.identified)
				return UCS_OK;
			if (!detail::read_msg(header, header_length, &h) || h.version != protocol_version) {
				core->drop(*c, "a hello of another protocol or version");
				return UCS_OK;
			}
			c->stats.identified = true;
			c->stats.source = h.source;
			try {
				for (std::size_t i = 0; i < core->opt.window; ++i) {
					c->memory.emplace_back(core->opt.max_chunk);
					c->memh.push_back(core->worker.map(c->memory.back().data(), core->opt.max_chunk));
					c->free_slots.push_back(i);
				}
			} catch (const std::exception &e) {
				core->drop(*c, std::string("no memory for its window: ") + e.what());
				return UCS_OK;
			}
			detail::CreditMsg m;
			m.credits = static_cast<std::uint32_t>(core->opt.window);
			m.max_chunk = core->opt.max_chunk;
			detail::send_small(c->ep, detail::am_welcome, m);
			return UCS_OK;
		}
		static ucs_status_t on_end(void *arg, const void *header, std::size_t header_length, void *,
					   std::size_t, const ucp_am_recv_param_t *param)
		{
			auto *core = static_cast<Core *>(arg);
			Conn *c = core->find(param);
			detail::HelloMsg h;
			if (c && detail::read_msg(header, header_length, &h)) {
				c->stats.ended = true;
				c->stats.end_sequence = h.next_sequence;
			}
			return UCS_OK;
		}
		static ucs_status_t on_chunk(void *arg, const void *header, std::size_t header_length, void *data,
					     std::size_t length, const ucp_am_recv_param_t *param)
		{
			auto *core = static_cast<Core *>(arg);
			Conn *c = core->find(param);
			if (!c || c->stats.lost)
				return UCS_OK;
			ChunkHeader h;
			if (header_length != sizeof h) {
				core->drop(*c, "a chunk without a valid header");
				return UCS_OK;
			}
			std::memcpy(&h, header, sizeof h);
			if (h.magic != chunk_magic || h.version != protocol_version || h.length != length) {
				core->drop(*c, "a chunk without a valid header");
				return UCS_OK;
			}
			if (!c->stats.identified || length > core->opt.max_chunk || c->free_slots.empty()) {
				core->drop(*c, !c->stats.identified   ? "a chunk before its hello"
					       : c->free_slots.empty() ? "more chunks than credits"
									: "a chunk over max_chunk");
				return UCS_OK;
			}
			auto a = std::make_unique<Arrival>();
			a->conn = c;
			a->header = h;
			a->slot = c->free_slots.back();
			c->free_slots.pop_back();
			std::byte *dst = c->memory[a->slot].data();
			if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
				ucp_request_param_t rp{};
				rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
						  UCP_OP_ATTR_FIELD_MEMH;
				rp.user_data = a.get();
				rp.memh = c->memh[a->slot];
				rp.cb.recv_am = [](void *req, ucs_status_t s, std::size_t, void *user) {
					auto *arr = static_cast<Arrival *>(user);
					(s == UCS_OK ? arr->complete : arr->failed) = true;
					ucp_request_free(req);
				};
				ucs_status_ptr_t r = ucp_am_recv_data_nbx(core->worker.get(), data, dst, length, &rp);
				if (r == nullptr)
					a->complete = true;
				else if (UCS_PTR_IS_ERR(r))
					a->failed = true;
			} else {
				std::memcpy(dst, data, length); // eager: UCX has it in its own buffer
				a->complete = true;
			}
			c->arriving.push_back(std::move(a));
			return UCS_OK;
		}
	};

	std::unique_ptr<Core> core_;
};

// The board (or any Transfer that fills buffers) -> network, with no CPU copy: a Relay whose
// sink is a Sender. `count` buffers of `chunk` bytes; run(bytes) sends `bytes` as chunks.
template <class Source>
using SourceToNetwork = Relay<Source, Sender>;

} // namespace bufmgr::net

#endif // BUFMGR_NET_HPP
