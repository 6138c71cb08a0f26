/* The headers the bindings read, listed here and nowhere else: the driver and
 * runtime APIs together, so that both share one set of types exactly as a C
 * program that includes both does (cudaStream_t and CUstream are the same
 * `struct CUstream_st *`), with the headers of the API groups and types a
 * CUDA program gets beside them (`cuda_runtime.h` includes library_types.h;
 * the Profiler Control groups of both APIs).
 *
 * The profiler headers come from NVIDIA's profiler-API component (the
 * toolkit's `cuda_profiler_api`, the wheel `nvidia-cuda-profiler-api`): where
 * a header set lacks them, the Profiler Control items are not declared.
 *
 * Headers of the toolkit's include/ that document driver or runtime API
 * groups, or that a C program including cuda.h and cuda_runtime.h reads, and
 * that the bindings do not read, each with its reason (tests/header_coverage.rs
 * compares this file with the headers of each release):
 *
 * not read: cudaEGL.h: EGL interoperability (group CUDA_EGL); needs the system's EGL headers
 * not read: cudaGL.h: OpenGL interoperability (groups CUDA_GL, CUDA_GL_DEPRECATED); needs the system's OpenGL headers
 * not read: cudaVDPAU.h: VDPAU interoperability (group CUDA_VDPAU); needs the system's VDPAU headers
 * not read: cuda_runtime.h: in C it adds nothing of its own to the headers it includes; the rest is C++ templates
 * not read: crt/host_config.h: nvcc's check of the host compiler; declares nothing
 * not read: channel_descriptor.h: C++ templates only (cudaCreateChannelDesc<T>); empty in C
 * not read: driver_functions.h: static inline helpers (make_cudaPitchedPtr, make_cudaPos, make_cudaExtent): no symbol to link
 * not read: vector_functions.h: static inline constructors of the vector types (make_int2, ...): no symbol to link
 * not read: vector_functions.hpp: the bodies of vector_functions.h's static inline constructors
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <library_types.h>
#if __has_include(<cudaProfiler.h>)
#include <cudaProfiler.h>
#endif
#if __has_include(<cuda_profiler_api.h>)
#include <cuda_profiler_api.h>
#endif
