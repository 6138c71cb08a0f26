/*
 * What the reproductions in this folder share: `RT(call)`, a runtime call
 * that must succeed (on failure its text and error name on stderr, and the
 * calling function returns 1). Included as "repro_common.h": the compiler
 * finds it beside the source it compiles.
 */
#ifndef REPRO_COMMON_H
#define REPRO_COMMON_H

#include <cuda_runtime.h>
#include <stdio.h>

#define RT(call)                                                              \
    do {                                                                      \
        cudaError_t e_ = (call);                                              \
        if (e_ != cudaSuccess) {                                              \
            fprintf(stderr, "%s: %s\n", #call, cudaGetErrorName(e_));         \
            return 1;                                                         \
        }                                                                     \
    } while (0)

#endif
