#pragma once
// Status and Result<T> are part of the public API: include/uringmq/status.h defines them (in
// uringmq::io, as every module names them). This header keeps the internal include path.
#include <uringmq/status.h>

#include "io/assert.h"
