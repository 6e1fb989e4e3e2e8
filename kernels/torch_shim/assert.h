// The C library's assert, except in the host code of a host-call library: there a failed assert throws,
// so that sage2tp reports it as the host function's failure (with the expression and where it is)
// instead of the whole process aborting. Device code keeps the C library's assert, so the kernels
// compile exactly as they would without this file. No include guard, like the C library's own
// <assert.h>: each inclusion redefines assert for the NDEBUG of that point.
#include_next <assert.h>

#if defined(__cplusplus) && !defined(__CUDA_ARCH__) && !defined(NDEBUG)
[[noreturn]] void s2tp_assert_failed(const char *expression, const char *file, unsigned line, const char *function);
#undef assert
#define assert(expression) \
    (static_cast<bool>(expression) ? void(0) : s2tp_assert_failed(#expression, __FILE__, __LINE__, __func__))
#endif
