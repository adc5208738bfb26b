// SPDX-License-Identifier: GPL-2.0-or-later
//
// The network modes of a build without UCX (configure found none, or --without-ucx): they say so.
#include "modes_impl.hpp"

namespace dmabench {

std::unique_ptr<Mode> make_net_mode(const ModeSpec &s, Env &)
{
	throw Unavailable("mode " + s.canonical +
			  " needs UCX: this dmabench was built without the network stage (configure found no "
			  "UCX, or --without-ucx; install libucx-dev)");
}

} // namespace dmabench
