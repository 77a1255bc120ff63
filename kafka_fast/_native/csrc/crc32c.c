/* CRC32C, byte-at-a-time table implementation. */
#include "crc32c.h"

static uint32_t table[256];
static int table_ready = 0;

static void build_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
        table[i] = c;
    }
    table_ready = 1;
}

uint32_t kf_crc32c(uint32_t crc, const void *buf, size_t len) {
    const uint8_t *p = (const uint8_t *)buf;
    if (!table_ready) build_table();
    crc = ~crc;
    while (len--) crc = table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

const char *kf_crc32c_impl(void) { return "table"; }
