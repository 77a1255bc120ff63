/* CRC32C (Castagnoli, reflected polynomial 0x82F63B78) with run-time CPU dispatch.
 *
 * Paths, best first: "vpclmul-avx512" (512-bit carry-less folding), "vpclmul-avx2" (256-bit),
 * "pclmul-fold" (128-bit, with three crc32-instruction lanes alongside on large inputs),
 * "sse4.2-3way" (crc32 instruction on three interleaved lanes), "armv8" (ARMv8 CRC32C
 * instructions on three interleaved lanes), "slicing-by-8" (portable).
 * The path is chosen once, on first use, from what the CPU supports; the environment variable
 * KAFKA_FAST_CRC32C_IMPL=<name> asks for a specific supported path instead.
 * All functions are thread-safe and may be called without holding the GIL.
 */
#ifndef KF_CRC32C_H
#define KF_CRC32C_H
#include <stddef.h>
#include <stdint.h>

/* Continue a CRC32C over buf[0..len). Start with crc = 0; pass a previous result to continue,
 * so kf_crc32c(kf_crc32c(0, a, na), b, nb) is the CRC of a followed by b. */
uint32_t kf_crc32c(uint32_t crc, const void *buf, size_t len);

/* Name of the path in use (static string). */
const char *kf_crc32c_impl(void);

/* Names of the paths this CPU supports, best first. Writes at most max pointers to static
 * strings into names and returns how many paths are supported. */
size_t kf_crc32c_impls(const char **names, size_t max);

/* Use the named path from now on (NULL: the best supported one). Returns 0, or -1 when the name
 * is unknown or the CPU does not support that path (the path in use is then unchanged). */
int kf_crc32c_select(const char *name);

#endif
