// SPDX-License-Identifier: GPL-2.0-or-later
//
// The GPU modes of a build without CUDA (configure found no nvcc): they say so.
#include "modes_impl.hpp"

namespace dmabench {

std::unique_ptr<Mode> make_gpu_mode(const ModeSpec &s, Env &)
{
	throw Unavailable("mode " + s.canonical +
			  " needs CUDA: this dmabench was built without it (configure found no nvcc; "
			  "see --with-cuda)");
}

} // namespace dmabench
