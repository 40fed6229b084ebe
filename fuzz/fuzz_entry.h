#pragma once
// URINGMQ_FUZZ_ENTRY(fn): libFuzzer's entry point calling fn(data, size), the target's one-input
// function. Empty when URINGMQ_FUZZ_NO_ENTRY is defined: the replay tests #include a target
// file and call its function on the committed corpus themselves.

#include <cstddef>
#include <cstdint>

#ifndef URINGMQ_FUZZ_NO_ENTRY
#define URINGMQ_FUZZ_ENTRY(fn)                                              \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { \
    return fn(data, size);                                                  \
  }
#else
#define URINGMQ_FUZZ_ENTRY(fn)
#endif
