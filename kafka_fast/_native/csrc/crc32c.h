/* CRC32C (Castagnoli) kernels with run-time CPU dispatch. */
#ifndef KF_CRC32C_H
#define KF_CRC32C_H
#include <stddef.h>
#include <stdint.h>

/* Continue a CRC32C over buf[0..len). Start with crc = 0. Thread-safe; callable without the GIL. */
uint32_t kf_crc32c(uint32_t crc, const void *buf, size_t len);

/* Name of the implementation selected for this CPU (static string). */
const char *kf_crc32c_impl(void);

#endif
