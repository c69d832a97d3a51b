/* <assert.h> for NVRTC (kevo): assert in device code, reported through the device runtime's
 * __assertfail (a failed assert stops the kernel with an error, as under nvcc). */
#undef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#define assert(e) ((e) ? (void)0 : __assertfail(#e, __FILE__, __LINE__, __func__, sizeof(char)))
#endif
