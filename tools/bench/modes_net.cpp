// SPDX-License-Identifier: GPL-2.0-or-later
//
// The network modes: board -> host -> network through libbufmgr's network stage
// (bufmgr::net::SourceToNetwork: the board fills user-memory DMA buffers, each is sent to a
// receiver straight from that memory and goes back to the board when its send has completed).
// The receivers are separate programs (mprace-recv) named by --net-to; they check the data,
// so these modes cannot verify anything themselves. The board's counter pattern starts at
// --net-seed when the mode starts and runs on across every transfer of the sweep, and the
// chunk headers carry each chunk's offset in that stream.
#include "../common/units.hpp"
#include "bufmgr/mprace_transfer.hpp"
#include "bufmgr/net.hpp"
#include "modes_impl.hpp"
#include "mprace/mprace.hpp"

using tools::format_size;
using tools::strprintf;

namespace dmabench {

namespace {

class NetMode : public Mode {
public:
	NetMode(const ModeSpec &s, Env &env) : s_(s), env_(env)
	{
		if (env.net_to().empty())
			throw Unavailable("mode " + s.canonical + " needs --net-to HOST:PORT (a receiver: mprace-recv)");
	}
	~NetMode() override { teardown(); }

	std::string name() const override { return s_.canonical; }
	std::string direction() const override { return "c2n"; }
	std::string description() const override
	{
		std::string to;
		for (const auto &r : env_.net_to())
			to += (to.empty() ? "" : ", ") + r;
		return strprintf("board -> host -> network through bufmgr's network stage (UCX): %u user-memory DMA "
				 "buffers of %s sent from where the board wrote them, to %s",
				 s_.buf_count, format_size(s_.buf_size).c_str(), to.c_str());
	}
	std::string auto_reference() const override { return "c2h-umem"; }
	std::uint64_t granule() const override { return MP_ENGINE_GRANULE; }
	std::string note() const override
	{
		return strprintf("the receivers check the data (mprace-recv); this sender is source %u, pattern seed %u",
				 env_.net_source(), env_.net_seed());
	}

	void setup(std::uint64_t) override
	{
		env_.route(MP_C2H_SOURCE_PATTERN, MP_H2C_SINK_CHECKER);
		mprace::Board &b = env_.board();
		b.setPatternRate(0);
		bufmgr::net::SenderOptions o;
		o.receivers = env_.net_to();
		o.source = static_cast<std::uint16_t>(env_.net_source());
		bufmgr::net::Sender sender(std::move(o));
		if (sender.max_chunk() < s_.buf_size)
			throw Unavailable(strprintf("mode %s: the receivers take chunks of at most %s (mprace-recv --max-chunk)",
						    s_.canonical.c_str(), format_size(sender.max_chunk()).c_str()));
		// The stream offset of the first chunk is 0: the pattern restarts here.
		b.setPatternSeed(env_.net_seed());
		relay_ = std::make_unique<Pipe>(bufmgr::MpraceTransfer(b, env_.engine(), bufmgr::MemoryKind::user),
						std::move(sender), s_.buf_count, s_.buf_size);
	}
	void transfer(std::uint64_t bytes) override
	{
		const std::size_t got = relay_->run(bytes);
		if (got != bytes)
			throw std::runtime_error(strprintf("%s: sent %zu of %llu bytes", s_.canonical.c_str(), got,
							   static_cast<unsigned long long>(bytes)));
	}
	// Ends the stream: the receivers see the sender's end (and its chunk count).
	void teardown() override { relay_.reset(); }

private:
	using Pipe = bufmgr::net::SourceToNetwork<bufmgr::MpraceTransfer>;
	ModeSpec s_;
	Env &env_;
	std::unique_ptr<Pipe> relay_;
};

} // namespace

std::unique_ptr<Mode> make_net_mode(const ModeSpec &s, Env &env) { return std::make_unique<NetMode>(s, env); }

} // namespace dmabench
