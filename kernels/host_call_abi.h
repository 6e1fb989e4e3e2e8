/* The interface between sage2tp and a host-call library: a launcher file compiled into a shared object
 * together with kernels/host_call_export.h, which exports one host function of the file (the one the
 * experiment's adapter calls) behind these plain C structures. sage2tp (src/gpu/host_call.cpp) loads
 * the library with dlopen and calls s2tp_host_call; no C++ type crosses the boundary, so sage2tp and the
 * library need not agree on a standard library or compiler.
 *
 * A call passes the host function's arguments in its parameter order: tensors (which wrap sage2tp's
 * device buffers), integers and reals. The library converts each to the parameter's C++ type, calls the
 * function, and reports what happened: the exception a TORCH_CHECK threw, the CUDA error it left, every
 * kernel launch it made (kernel, grid, block, dynamic shared memory), the tensor it returned and the
 * device memory its torch::empty calls had to allocate. */
#ifndef S2TP_HOST_CALL_ABI_H
#define S2TP_HOST_CALL_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a structure below changes; a library of another version is refused. */
#define S2TP_HOST_CALL_VERSION 2

#define S2TP_HOST_MAX_DIMS 6
#define S2TP_HOST_MAX_LAUNCHES 16
#define S2TP_HOST_MESSAGE_BYTES 2048
#define S2TP_HOST_KERNEL_NAME_BYTES 1024

enum s2tp_host_value_kind { S2TP_HOST_TENSOR = 1, S2TP_HOST_INTEGER = 2, S2TP_HOST_REAL = 3 };

/* dtype holds torch's ScalarType code (c10/core/ScalarType.h): 1 int8, 5 f16, 6 f32, 15 bf16, 24 e4m3. */
typedef struct {
    void *data;
    int32_t dtype;
    int32_t dims;
    int64_t sizes[S2TP_HOST_MAX_DIMS];
    int64_t strides[S2TP_HOST_MAX_DIMS]; /* in elements */
    int32_t device;                      /* CUDA device index; -1 for the CPU; S2TP_HOST_CURRENT_DEVICE */
} s2tp_host_tensor;

/* A tensor on whatever device is current in the calling thread when the call is made. */
#define S2TP_HOST_CURRENT_DEVICE (-2)

typedef struct {
    int32_t kind; /* s2tp_host_value_kind */
    s2tp_host_tensor tensor;
    int64_t integer;
    double real;
} s2tp_host_value;

typedef struct {
    const s2tp_host_value *values;
    int32_t count;
    void *stream;                /* cudaStream_t: what at::cuda::getCurrentCUDAStream() returns */
    int32_t poison_allocations;  /* fill each torch::empty block with 0xFF bytes (NaN) on `stream` */
    int32_t keep_for_replay;     /* keep this call's launches, argument bytes included, for s2tp_host_replay */
} s2tp_host_request;

enum s2tp_host_status {
    S2TP_HOST_OK = 0,
    S2TP_HOST_THREW = 1,        /* the host function threw: a TORCH_CHECK, a dispatch, an assert */
    S2TP_HOST_CUDA_ERROR = 2,   /* a launch failed, or the call left a CUDA error behind */
    S2TP_HOST_BAD_ARGUMENTS = 3 /* the values do not fit the host function's parameters */
};

typedef struct {
    char kernel[S2TP_HOST_KERNEL_NAME_BYTES]; /* the kernel's mangled name, as the cubin spells it */
    uint32_t grid[3], block[3];
    uint64_t dynamic_smem_bytes;
    int32_t cluster[3];                       /* 0 0 0 unless launched with a cluster dimension */
    int32_t status;                           /* the launch call's cudaError_t */
    /* What the driver's occupancy calculator gives for this kernel at this block size and dynamic
     * shared memory, and the kernel's registers per thread; both 0 when the driver could not say. */
    int32_t blocks_per_sm;
    int32_t registers;
} s2tp_launch_record;

typedef struct {
    int32_t status; /* s2tp_host_status */
    char message[S2TP_HOST_MESSAGE_BYTES];
    int32_t launch_count; /* all the call made; the first S2TP_HOST_MAX_LAUNCHES are recorded */
    s2tp_launch_record launches[S2TP_HOST_MAX_LAUNCHES];
    int32_t returned_tensor; /* 1 when the function returned a tensor with elements (kept until the next call) */
    s2tp_host_tensor returned;
    int32_t device_allocations; /* cudaMalloc calls torch::empty made during this call */
} s2tp_host_report;

/* What a host-call library exports (kernels/host_call_export.h defines them). */
typedef int32_t (*s2tp_host_call_version_fn)(void);
typedef const char *(*s2tp_host_function_name_fn)(void);
typedef int32_t (*s2tp_host_call_fn)(const s2tp_host_request *request, s2tp_host_report *report);
/* Launches the launches of the last call made with keep_for_replay again, directly (cudaLaunchKernel
 * with the same arguments, no host function): what the kernels cost without the host code around them. */
typedef int32_t (*s2tp_host_replay_fn)(void *stream, s2tp_host_report *report);

#ifdef __cplusplus
}
#endif

#endif /* S2TP_HOST_CALL_ABI_H */
