/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Deprecated, kept for one release: the generated spec headers are <mprace-spec/pattern.h>. */
#include <mprace-spec/pattern.h>
