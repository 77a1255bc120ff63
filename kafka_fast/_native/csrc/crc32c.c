/* CRC32C kernels and their run-time dispatch (see crc32c.h).
 *
 * Notation: a CRC "state" is the reflected 32-bit register between the initial and the final
 * inversion. For a state s and message M, crc(s, M) is linear, so
 *     crc(s, A || B) = shift(crc(s, A), |B|) ^ crc(0, B),   shift(s, n) = s * x^(8n) mod P,
 * which is how the three-lane kernels join their lanes. The folding kernels keep 128-bit
 * remainders (one per vector lane) congruent to the message read so far and move each one D
 * bytes forward with carry-less multiplications by x^(8D+63) and x^(8D-1) mod P; at the end the
 * remainder is itself a 16-byte message with the same CRC, which the crc32 instruction finishes.
 *
 * All constants (byte tables, lane shift tables, folding multipliers) are computed once at
 * first use from the polynomial, under a once-only initialiser.
 */
#include "crc32c.h"

#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#include <windows.h>
#else
#include <pthread.h>
#endif

#define KF_POLY 0x82F63B78u /* x^32 + x^28 + x^27 + ... + 1, reflected, without x^32 */

#if defined(__GNUC__) || defined(__clang__)
#define KF_GNUC 1
#define KF_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define KF_TARGET(features) __attribute__((target(features)))
#else
#define KF_UNLIKELY(x) (x)
#endif

#if defined(KF_GNUC) && defined(__x86_64__)
#define KF_X86 1
#include <cpuid.h>
#include <immintrin.h>
#endif

#if defined(KF_GNUC) && defined(__aarch64__) && defined(__BYTE_ORDER__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && (defined(__linux__) || defined(__APPLE__))
#define KF_ARM 1
#include <arm_acle.h>
#if defined(__linux__)
#include <sys/auxv.h>
#endif
#if defined(__clang__)
#define KF_ARM_CRC KF_TARGET("crc")
#else
#define KF_ARM_CRC KF_TARGET("+crc")
#endif
#endif

/* ------------------------------------------------------------------------------------------ */
/* GF(2) arithmetic modulo P on reflected values (bit 31 is x^0).                             */

static uint32_t kf_gf_mul(uint32_t a, uint32_t b) {
    uint32_t product = 0;
    for (int i = 0; i < 32; i++) {
        if (a & 0x80000000u) product ^= b;
        a <<= 1;
        b = (b >> 1) ^ (KF_POLY & (0u - (b & 1u)));
    }
    return product;
}

/* x^n mod P. */
static uint32_t kf_gf_xpow(uint64_t n) {
    uint32_t result = 0x80000000u, square = 0x40000000u; /* x^0, x^1 */
    while (n) {
        if (n & 1u) result = kf_gf_mul(result, square);
        square = kf_gf_mul(square, square);
        n >>= 1;
    }
    return result;
}

static inline uint32_t kf_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ------------------------------------------------------------------------------------------ */
/* Portable: slicing-by-8. kf_sb8[k][b] is the state after byte b followed by k zero bytes.   */

static uint32_t kf_sb8[8][256];

static uint32_t kf_crc_sb8(uint32_t s, const uint8_t *p, size_t n) {
    while (n && ((uintptr_t)p & 7u)) {
        s = kf_sb8[0][(s ^ *p++) & 0xFFu] ^ (s >> 8);
        n--;
    }
    while (n >= 8) {
        uint32_t lo = s ^ kf_le32(p), hi = kf_le32(p + 4);
        s = kf_sb8[7][lo & 0xFFu] ^ kf_sb8[6][(lo >> 8) & 0xFFu] ^ kf_sb8[5][(lo >> 16) & 0xFFu] ^
            kf_sb8[4][lo >> 24] ^ kf_sb8[3][hi & 0xFFu] ^ kf_sb8[2][(hi >> 8) & 0xFFu] ^
            kf_sb8[1][(hi >> 16) & 0xFFu] ^ kf_sb8[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) s = kf_sb8[0][(s ^ *p++) & 0xFFu] ^ (s >> 8);
    return s;
}

/* ------------------------------------------------------------------------------------------ */
/* Three-lane kernels (crc32 instruction on x86-64 and ARMv8): the instruction has a latency  */
/* of three cycles and a throughput of one, so three independent lanes keep it busy. Lanes   */
/* of KF_LANE_<level> bytes are joined with kf_shift[level], a 4 x 256 table for shift(., L). */

#if defined(KF_X86) || defined(KF_ARM)
#define KF_LANE_0 4096
#define KF_LANE_1 512
#define KF_LANE_2 64
static const size_t kf_lane_len[3] = {KF_LANE_0, KF_LANE_1, KF_LANE_2};
static uint32_t kf_shift[3][4][256];

static inline uint32_t kf_shift_apply(int level, uint32_t s) {
    const uint32_t(*t)[256] = kf_shift[level];
    return t[0][s & 0xFFu] ^ t[1][(s >> 8) & 0xFFu] ^ t[2][(s >> 16) & 0xFFu] ^ t[3][s >> 24];
}

static inline uint64_t kf_load64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

#define KF_THREEWAY_LEVEL(LEVEL, LANE, WORD, STEP64)                                           \
    while (n >= 3 * (size_t)(LANE)) {                                                          \
        WORD a = s, b = 0, c = 0;                                                              \
        for (size_t i = 0; i < (LANE); i += 8) {                                               \
            a = STEP64(a, kf_load64(p + i));                                                   \
            b = STEP64(b, kf_load64(p + (LANE) + i));                                          \
            c = STEP64(c, kf_load64(p + 2 * (LANE) + i));                                      \
        }                                                                                      \
        s = kf_shift_apply(LEVEL, kf_shift_apply(LEVEL, (uint32_t)a) ^ (uint32_t)b) ^ (uint32_t)c; \
        p += 3 * (size_t)(LANE);                                                               \
        n -= 3 * (size_t)(LANE);                                                               \
    }

#define KF_THREEWAY(WORD, STEP64)                                                              \
    KF_THREEWAY_LEVEL(0, KF_LANE_0, WORD, STEP64)                                              \
    KF_THREEWAY_LEVEL(1, KF_LANE_1, WORD, STEP64)                                              \
    KF_THREEWAY_LEVEL(2, KF_LANE_2, WORD, STEP64)
#endif

/* ------------------------------------------------------------------------------------------ */
/* x86-64                                                                                      */

#if defined(KF_X86)
#define KF_X86_STEP64(s, v) _mm_crc32_u64((s), (v))

KF_TARGET("sse4.2")
static inline uint32_t kf_crc_sse42_serial(uint32_t s, const uint8_t *p, size_t n) {
    uint64_t w = s;
    for (; n >= 8; p += 8, n -= 8) w = _mm_crc32_u64(w, kf_load64(p));
    s = (uint32_t)w;
    if (n & 4) {
        s = _mm_crc32_u32(s, kf_le32(p));
        p += 4;
    }
    if (n & 2) {
        s = _mm_crc32_u16(s, (uint16_t)(p[0] | p[1] << 8));
        p += 2;
    }
    if (n & 1) s = _mm_crc32_u8(s, *p);
    return s;
}

KF_TARGET("sse4.2")
static uint32_t kf_crc_sse42(uint32_t s, const uint8_t *p, size_t n) {
    KF_THREEWAY(uint64_t, KF_X86_STEP64)
    return kf_crc_sse42_serial(s, p, n);
}

/* Folding multipliers: kf_fold_k[i] moves a 16-byte block forward by D = 16 * i bytes.
 * For a block X = XL * x^64 + XH (XL = first 8 bytes), X * x^(8D) = XL * x^(8D + 64) + XH * x^(8D);
 * a carry-less product of two reflected 64-bit values carries one extra factor x, hence the
 * exponents 8D + 63 and 8D - 1. The 32-bit residues sit in the high half of each 64-bit word. */
#define KF_FOLD_MAX 16
static uint64_t kf_fold_k[KF_FOLD_MAX + 1][2];

static void kf_fold_init(void) {
    for (int i = 1; i <= KF_FOLD_MAX; i++) {
        uint64_t bits = 128u * (uint64_t)i;
        kf_fold_k[i][0] = (uint64_t)kf_gf_xpow(bits + 63) << 32;
        kf_fold_k[i][1] = (uint64_t)kf_gf_xpow(bits - 1) << 32;
    }
}

KF_TARGET("sse4.2,pclmul")
static inline __m128i kf_k128(int i) { return _mm_loadu_si128((const __m128i *)kf_fold_k[i]); }

KF_TARGET("sse4.2,pclmul")
static inline __m128i kf_fold16(__m128i x, __m128i k, __m128i next) {
    __m128i lo = _mm_clmulepi64_si128(x, k, 0x00), hi = _mm_clmulepi64_si128(x, k, 0x11);
    return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

/* Fold the remaining whole 16-byte blocks into x, reduce x with the crc32 instruction (x is a
 * 16-byte message congruent to everything read so far) and finish the tail. */
KF_TARGET("sse4.2,pclmul")
static inline uint32_t kf_finish128(__m128i x, const uint8_t *p, size_t n) {
    const __m128i k16 = kf_k128(1);
    while (n >= 16) {
        x = kf_fold16(x, k16, _mm_loadu_si128((const __m128i *)p));
        p += 16;
        n -= 16;
    }
    uint32_t s = (uint32_t)_mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(x));
    s = (uint32_t)_mm_crc32_u64(s, (uint64_t)_mm_extract_epi64(x, 1));
    return kf_crc_sse42_serial(s, p, n);
}

/* Large inputs go in blocks of a folding part (64 * KF_FUSED_ITERS bytes) followed by three
 * crc32 lanes of KF_LANE_0 bytes, all advanced in one loop: the carry-less multiplier and the
 * crc32 instruction run on different execution ports, so the lanes come almost for free. */
#define KF_FUSED_ITERS (KF_LANE_0 / 16)
#define KF_FUSED_BLOCK (64 * KF_FUSED_ITERS + 3 * KF_LANE_0)

KF_TARGET("sse4.2,pclmul")
static uint32_t kf_crc_pclmul_fused(uint32_t s, const uint8_t *p) {
    const __m128i *v = (const __m128i *)p;
    __m128i x0 = _mm_xor_si128(_mm_loadu_si128(v), _mm_cvtsi32_si128((int)s));
    __m128i x1 = _mm_loadu_si128(v + 1), x2 = _mm_loadu_si128(v + 2), x3 = _mm_loadu_si128(v + 3);
    const __m128i k64 = kf_k128(4);
    const uint8_t *lane = p + 64 * KF_FUSED_ITERS;
    uint64_t a = 0, b = 0, c = 0;
    for (size_t i = 1; i < KF_FUSED_ITERS; i++) {
        v = (const __m128i *)(p + 64 * i);
        x0 = kf_fold16(x0, k64, _mm_loadu_si128(v));
        x1 = kf_fold16(x1, k64, _mm_loadu_si128(v + 1));
        x2 = kf_fold16(x2, k64, _mm_loadu_si128(v + 2));
        x3 = kf_fold16(x3, k64, _mm_loadu_si128(v + 3));
        const uint8_t *q = lane + 16 * (i - 1);
        a = _mm_crc32_u64(a, kf_load64(q));
        b = _mm_crc32_u64(b, kf_load64(q + KF_LANE_0));
        c = _mm_crc32_u64(c, kf_load64(q + 2 * KF_LANE_0));
        a = _mm_crc32_u64(a, kf_load64(q + 8));
        b = _mm_crc32_u64(b, kf_load64(q + KF_LANE_0 + 8));
        c = _mm_crc32_u64(c, kf_load64(q + 2 * KF_LANE_0 + 8));
    }
    const uint8_t *q = lane + 16 * (KF_FUSED_ITERS - 1);
    a = _mm_crc32_u64(_mm_crc32_u64(a, kf_load64(q)), kf_load64(q + 8));
    b = _mm_crc32_u64(_mm_crc32_u64(b, kf_load64(q + KF_LANE_0)), kf_load64(q + KF_LANE_0 + 8));
    c = _mm_crc32_u64(_mm_crc32_u64(c, kf_load64(q + 2 * KF_LANE_0)),
                      kf_load64(q + 2 * KF_LANE_0 + 8));
    __m128i x = kf_fold16(x0, kf_k128(3), kf_fold16(x1, kf_k128(2), kf_fold16(x2, kf_k128(1), x3)));
    uint32_t folded = (uint32_t)_mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(x));
    folded = (uint32_t)_mm_crc32_u64(folded, (uint64_t)_mm_extract_epi64(x, 1));
    s = kf_shift_apply(0, folded) ^ (uint32_t)a;
    s = kf_shift_apply(0, s) ^ (uint32_t)b;
    return kf_shift_apply(0, s) ^ (uint32_t)c;
}

KF_TARGET("sse4.2,pclmul")
static uint32_t kf_crc_pclmul(uint32_t s, const uint8_t *p, size_t n) {
    if (n < 128) return kf_crc_sse42_serial(s, p, n);
    for (; n >= KF_FUSED_BLOCK; p += KF_FUSED_BLOCK, n -= KF_FUSED_BLOCK)
        s = kf_crc_pclmul_fused(s, p);
    if (n < 128) return kf_crc_sse42_serial(s, p, n);
    const __m128i *v = (const __m128i *)p;
    __m128i x0 = _mm_xor_si128(_mm_loadu_si128(v), _mm_cvtsi32_si128((int)s));
    __m128i x1 = _mm_loadu_si128(v + 1), x2 = _mm_loadu_si128(v + 2), x3 = _mm_loadu_si128(v + 3);
    p += 64;
    n -= 64;
    const __m128i k64 = kf_k128(4);
    while (n >= 64) {
        v = (const __m128i *)p;
        x0 = kf_fold16(x0, k64, _mm_loadu_si128(v));
        x1 = kf_fold16(x1, k64, _mm_loadu_si128(v + 1));
        x2 = kf_fold16(x2, k64, _mm_loadu_si128(v + 2));
        x3 = kf_fold16(x3, k64, _mm_loadu_si128(v + 3));
        p += 64;
        n -= 64;
    }
    /* The products are independent; only the XORs chain. */
    __m128i x = kf_fold16(x0, kf_k128(3), kf_fold16(x1, kf_k128(2), kf_fold16(x2, kf_k128(1), x3)));
    return kf_finish128(x, p, n);
}

#if defined(__clang__) ? __clang_major__ >= 6 : __GNUC__ >= 8 /* compilers that know VPCLMULQDQ */
#define KF_VPCLMUL 1

/* Below this size the serial head that aligns the wide loads costs more than split loads. */
#define KF_ALIGN_MIN 8192

#define KF_AVX2 "avx2,vpclmulqdq,pclmul,sse4.2"

KF_TARGET(KF_AVX2)
static inline __m256i kf_k256(int i) { return _mm256_broadcastsi128_si256(kf_k128(i)); }

KF_TARGET(KF_AVX2)
static inline __m256i kf_fold32(__m256i y, __m256i k, __m256i next) {
    __m256i lo = _mm256_clmulepi64_epi128(y, k, 0x00), hi = _mm256_clmulepi64_epi128(y, k, 0x11);
    return _mm256_xor_si256(_mm256_xor_si256(lo, hi), next);
}

KF_TARGET(KF_AVX2)
static uint32_t kf_crc_avx2(uint32_t s, const uint8_t *p, size_t n) {
    if (n < 512) return kf_crc_pclmul(s, p, n);
    if (n >= KF_ALIGN_MIN) {
        size_t head = (size_t)(0u - (uintptr_t)p) & 31u;
        s = kf_crc_sse42_serial(s, p, head);
        p += head;
        n -= head;
    }
    const __m256i *v = (const __m256i *)p;
    __m256i y[8];
    y[0] = _mm256_xor_si256(_mm256_loadu_si256(v), _mm256_setr_epi32((int)s, 0, 0, 0, 0, 0, 0, 0));
    for (int i = 1; i < 8; i++) y[i] = _mm256_loadu_si256(v + i);
    p += 256;
    n -= 256;
    const __m256i k256 = kf_k256(16);
    while (n >= 256) {
        v = (const __m256i *)p;
        for (int i = 0; i < 8; i++) y[i] = kf_fold32(y[i], k256, _mm256_loadu_si256(v + i));
        p += 256;
        n -= 256;
    }
    __m256i acc = y[7];
    for (int i = 6; i >= 0; i--) acc = kf_fold32(y[i], kf_k256(2 * (7 - i)), acc);
    const __m256i k32 = kf_k256(2);
    while (n >= 32) {
        acc = kf_fold32(acc, k32, _mm256_loadu_si256((const __m256i *)p));
        p += 32;
        n -= 32;
    }
    __m128i x = kf_fold16(_mm256_castsi256_si128(acc), kf_k128(1), _mm256_extracti128_si256(acc, 1));
    return kf_finish128(x, p, n);
}

#define KF_AVX512 "avx512f,vpclmulqdq,pclmul,sse4.2"

KF_TARGET(KF_AVX512)
static inline __m512i kf_k512(int i) { return _mm512_broadcast_i32x4(kf_k128(i)); }

KF_TARGET(KF_AVX512)
static inline __m512i kf_fold64(__m512i z, __m512i k, __m512i next) {
    __m512i lo = _mm512_clmulepi64_epi128(z, k, 0x00), hi = _mm512_clmulepi64_epi128(z, k, 0x11);
    return _mm512_ternarylogic_epi64(lo, hi, next, 0x96); /* lo ^ hi ^ next */
}

KF_TARGET(KF_AVX512)
static uint32_t kf_crc_avx512(uint32_t s, const uint8_t *p, size_t n) {
    if (n < 256) return kf_crc_pclmul(s, p, n);
    if (n >= KF_ALIGN_MIN) {
        size_t head = (size_t)(0u - (uintptr_t)p) & 63u;
        s = kf_crc_sse42_serial(s, p, head);
        p += head;
        n -= head;
    }
    __m512i z0 = _mm512_xor_si512(_mm512_loadu_si512(p), _mm512_maskz_set1_epi32(1, (int)s));
    __m512i z1 = _mm512_loadu_si512(p + 64), z2 = _mm512_loadu_si512(p + 128);
    __m512i z3 = _mm512_loadu_si512(p + 192);
    p += 256;
    n -= 256;
    const __m512i k256 = kf_k512(16);
    while (n >= 256) {
        z0 = kf_fold64(z0, k256, _mm512_loadu_si512(p));
        z1 = kf_fold64(z1, k256, _mm512_loadu_si512(p + 64));
        z2 = kf_fold64(z2, k256, _mm512_loadu_si512(p + 128));
        z3 = kf_fold64(z3, k256, _mm512_loadu_si512(p + 192));
        p += 256;
        n -= 256;
    }
    __m512i z = kf_fold64(z0, kf_k512(12), kf_fold64(z1, kf_k512(8), kf_fold64(z2, kf_k512(4), z3)));
    const __m512i k64 = kf_k512(4);
    while (n >= 64) {
        z = kf_fold64(z, k64, _mm512_loadu_si512(p));
        p += 64;
        n -= 64;
    }
    __m128i x = kf_fold16(_mm512_extracti32x4_epi32(z, 0), kf_k128(3),
                          kf_fold16(_mm512_extracti32x4_epi32(z, 1), kf_k128(2),
                                    kf_fold16(_mm512_extracti32x4_epi32(z, 2), kf_k128(1),
                                              _mm512_extracti32x4_epi32(z, 3))));
    return kf_finish128(x, p, n);
}
#endif /* KF_VPCLMUL */

static void kf_cpuid(unsigned leaf, unsigned sub, unsigned r[4]) {
    r[0] = r[1] = r[2] = r[3] = 0;
    __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
}

enum { KF_SSE42 = 1, KF_PCLMUL = 2, KF_VPCLMUL_AVX2 = 4, KF_VPCLMUL_AVX512 = 8 };
static unsigned kf_x86_features;

static void kf_x86_detect(void) {
    unsigned r[4];
    kf_cpuid(0, 0, r);
    unsigned max_leaf = r[0];
    kf_cpuid(1, 0, r);
    if (!(r[2] & (1u << 20))) return; /* SSE4.2 */
    kf_x86_features |= KF_SSE42;
    if (!(r[2] & (1u << 1))) return; /* PCLMULQDQ */
    kf_x86_features |= KF_PCLMUL;
    if (!(r[2] & (1u << 27)) || !(r[2] & (1u << 28)) || max_leaf < 7) return; /* OSXSAVE, AVX */
    unsigned xcr0, xcr0_hi;
    __asm__ volatile("xgetbv" : "=a"(xcr0), "=d"(xcr0_hi) : "c"(0));
    (void)xcr0_hi;
    if ((xcr0 & 0x06u) != 0x06u) return; /* the OS saves XMM and YMM state */
    kf_cpuid(7, 0, r);
    if (!(r[2] & (1u << 10))) return; /* VPCLMULQDQ */
    if (r[1] & (1u << 5)) kf_x86_features |= KF_VPCLMUL_AVX2;
    if ((r[1] & (1u << 16)) && (xcr0 & 0xE0u) == 0xE0u) /* AVX512F; opmask and ZMM state */
        kf_x86_features |= KF_VPCLMUL_AVX512;
}

static int kf_has_sse42(void) { return (kf_x86_features & KF_SSE42) != 0; }
static int kf_has_pclmul(void) { return (kf_x86_features & KF_PCLMUL) != 0; }
static int kf_has_avx2(void) { return (kf_x86_features & KF_VPCLMUL_AVX2) != 0; }
static int kf_has_avx512(void) { return (kf_x86_features & KF_VPCLMUL_AVX512) != 0; }
#endif /* KF_X86 */

/* ------------------------------------------------------------------------------------------ */
/* aarch64                                                                                     */

#if defined(KF_ARM)
#define KF_ARM_STEP64(s, v) __crc32cd((s), (v))

KF_ARM_CRC
static uint32_t kf_crc_armv8(uint32_t s, const uint8_t *p, size_t n) {
    KF_THREEWAY(uint32_t, KF_ARM_STEP64)
    for (; n >= 8; p += 8, n -= 8) s = __crc32cd(s, kf_load64(p));
    if (n & 4) {
        s = __crc32cw(s, kf_le32(p));
        p += 4;
    }
    if (n & 2) {
        s = __crc32ch(s, (uint16_t)(p[0] | p[1] << 8));
        p += 2;
    }
    if (n & 1) s = __crc32cb(s, *p);
    return s;
}

static int kf_has_armv8(void) {
#if defined(__APPLE__)
    return 1; /* every 64-bit Apple CPU has the CRC32 instructions */
#else
    return (getauxval(AT_HWCAP) & (1ul << 7)) != 0; /* HWCAP_CRC32 */
#endif
}
#endif /* KF_ARM */

/* ------------------------------------------------------------------------------------------ */
/* Dispatch                                                                                    */

typedef uint32_t (*kf_kernel)(uint32_t state, const uint8_t *p, size_t n);

struct kf_path {
    const char *name;
    kf_kernel run;
    int (*supported)(void);
};

static int kf_always(void) { return 1; }

static const struct kf_path kf_paths[] = {
#if defined(KF_X86)
#if defined(KF_VPCLMUL)
    {"vpclmul-avx512", kf_crc_avx512, kf_has_avx512},
    {"vpclmul-avx2", kf_crc_avx2, kf_has_avx2},
#endif
    {"pclmul-fold", kf_crc_pclmul, kf_has_pclmul},
    {"sse4.2-3way", kf_crc_sse42, kf_has_sse42},
#endif
#if defined(KF_ARM)
    {"armv8", kf_crc_armv8, kf_has_armv8},
#endif
    {"slicing-by-8", kf_crc_sb8, kf_always},
};
#define KF_NPATHS (sizeof kf_paths / sizeof kf_paths[0])

static int kf_path_ok[KF_NPATHS];
static const struct kf_path *kf_current;

#if defined(KF_GNUC)
#define KF_LOAD_ACQUIRE(p) __atomic_load_n(&(p), __ATOMIC_ACQUIRE)
#define KF_STORE_RELEASE(p, v) __atomic_store_n(&(p), (v), __ATOMIC_RELEASE)
#else /* MSVC: aligned pointer loads and stores are atomic; the barrier orders them. */
#define KF_LOAD_ACQUIRE(p) (MemoryBarrier(), (p))
#define KF_STORE_RELEASE(p, v) (MemoryBarrier(), (p) = (v))
#endif

static const struct kf_path *kf_find(const char *name) {
    for (size_t i = 0; i < KF_NPATHS; i++)
        if (kf_path_ok[i] && strcmp(kf_paths[i].name, name) == 0) return &kf_paths[i];
    return NULL;
}

static const struct kf_path *kf_best(void) {
    for (size_t i = 0; i < KF_NPATHS; i++)
        if (kf_path_ok[i]) return &kf_paths[i];
    return &kf_paths[KF_NPATHS - 1];
}

static void kf_init(void) {
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (KF_POLY & (0u - (c & 1u)));
        kf_sb8[0][b] = c;
    }
    for (int k = 1; k < 8; k++)
        for (int b = 0; b < 256; b++)
            kf_sb8[k][b] = (kf_sb8[k - 1][b] >> 8) ^ kf_sb8[0][kf_sb8[k - 1][b] & 0xFFu];
#if defined(KF_X86) || defined(KF_ARM)
    for (int level = 0; level < 3; level++) {
        uint32_t x8l = kf_gf_xpow(8u * (uint64_t)kf_lane_len[level]);
        for (int byte = 0; byte < 4; byte++)
            for (uint32_t b = 0; b < 256; b++)
                kf_shift[level][byte][b] = kf_gf_mul(x8l, b << (8 * byte));
    }
#endif
#if defined(KF_X86)
    kf_fold_init();
    kf_x86_detect();
#endif
    for (size_t i = 0; i < KF_NPATHS; i++) kf_path_ok[i] = kf_paths[i].supported();

    const struct kf_path *chosen = NULL;
    const char *wanted = getenv("KAFKA_FAST_CRC32C_IMPL");
    if (wanted && *wanted) chosen = kf_find(wanted);
    if (!chosen) chosen = kf_best();
    KF_STORE_RELEASE(kf_current, chosen);
}

#if defined(_WIN32)
static INIT_ONCE kf_once = INIT_ONCE_STATIC_INIT;
static BOOL CALLBACK kf_init_once(PINIT_ONCE once, PVOID arg, PVOID *ctx) {
    (void)once;
    (void)arg;
    (void)ctx;
    kf_init();
    return TRUE;
}
static void kf_ensure_init(void) { InitOnceExecuteOnce(&kf_once, kf_init_once, NULL, NULL); }
#else
static pthread_once_t kf_once = PTHREAD_ONCE_INIT;
static void kf_ensure_init(void) { pthread_once(&kf_once, kf_init); }
#endif

static inline const struct kf_path *kf_path_in_use(void) {
    const struct kf_path *path = KF_LOAD_ACQUIRE(kf_current);
    if (KF_UNLIKELY(path == NULL)) {
        kf_ensure_init();
        path = KF_LOAD_ACQUIRE(kf_current);
    }
    return path;
}

uint32_t kf_crc32c(uint32_t crc, const void *buf, size_t len) {
    if (len == 0) return crc;
    return ~kf_path_in_use()->run(~crc, (const uint8_t *)buf, len);
}

const char *kf_crc32c_impl(void) { return kf_path_in_use()->name; }

size_t kf_crc32c_impls(const char **names, size_t max) {
    size_t count = 0;
    kf_ensure_init();
    for (size_t i = 0; i < KF_NPATHS; i++) {
        if (!kf_path_ok[i]) continue;
        if (count < max) names[count] = kf_paths[i].name;
        count++;
    }
    return count;
}

int kf_crc32c_select(const char *name) {
    kf_ensure_init();
    const struct kf_path *path = name ? kf_find(name) : kf_best();
    if (!path) return -1;
    KF_STORE_RELEASE(kf_current, path);
    return 0;
}
