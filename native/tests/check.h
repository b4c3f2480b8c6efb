// Minimal assertion helper for the standalone C++ tests (no framework: they must also build with a bare
// cross-compiler under qemu). A failed check prints where and exits non-zero.
#pragma once

#include <cstdio>
#include <cstdlib>

#define NEXUS_CHECK(cond, ...)                                                  \
    do {                                                                        \
        if (!(cond)) {                                                          \
            std::fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            std::fprintf(stderr, __VA_ARGS__);                                  \
            std::fprintf(stderr, "\n");                                         \
            std::exit(1);                                                       \
        }                                                                       \
    } while (0)
