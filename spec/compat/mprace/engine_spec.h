/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Deprecated, kept for one release: the generated spec headers are <mprace-spec/engine_spec.h>. */
#include <mprace-spec/engine_spec.h>
