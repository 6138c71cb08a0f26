/* The one header bindgen reads: the driver and runtime APIs together, so that
 * both share one set of types exactly as a C program that includes both does
 * (cudaStream_t and CUstream are the same `struct CUstream_st *`). */
#include <cuda.h>
#include <cuda_runtime_api.h>
