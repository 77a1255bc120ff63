/* Kafka RecordBatch v2 kernels: zigzag varints, record encoding and bounds-checked parsing.
 * Everything here runs without the GIL and allocates nothing. */
#ifndef KF_RECORDS_H
#define KF_RECORDS_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define KF_BATCH_HEADER 61 /* baseOffset .. recordCount */
#define KF_CRC_START 21    /* the CRC covers attributes .. end */
#define KF_LOG_OVERHEAD 12 /* baseOffset + batchLength */
#define KF_MIN_RECORD 7    /* smallest possible encoded record */

/* ---- big-endian loads/stores ------------------------------------------------------------- */
static inline uint64_t kf_load_be64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return __builtin_bswap64(v);
}
static inline uint32_t kf_load_be32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return __builtin_bswap32(v);
}
static inline uint16_t kf_load_be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static inline void kf_store_be64(uint8_t *p, uint64_t v) {
    v = __builtin_bswap64(v);
    memcpy(p, &v, 8);
}
static inline void kf_store_be32(uint8_t *p, uint32_t v) {
    v = __builtin_bswap32(v);
    memcpy(p, &v, 4);
}
static inline void kf_store_be16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

/* ---- varints ----------------------------------------------------------------------------- */
static inline uint64_t kf_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t kf_unzigzag(uint64_t u) { return (int64_t)(u >> 1) ^ -(int64_t)(u & 1); }

static inline size_t kf_uvarint_size(uint64_t u) {
    /* 1 + floor(bits/7) with bits = 64 - clz(u|1) */
    int bits = 64 - __builtin_clzll(u | 1);
    return (size_t)((bits * 9 + 64) >> 6);
}
static inline size_t kf_varint_size(int64_t v) { return kf_uvarint_size(kf_zigzag(v)); }

static inline uint8_t *kf_put_uvarint(uint8_t *p, uint64_t u) {
    while (u >= 0x80) {
        *p++ = (uint8_t)(u | 0x80);
        u >>= 7;
    }
    *p++ = (uint8_t)u;
    return p;
}
static inline uint8_t *kf_put_varint(uint8_t *p, int64_t v) { return kf_put_uvarint(p, kf_zigzag(v)); }

enum {
    KF_OK = 0,
    KF_E_TRUNCATED_VARINT,
    KF_E_VARINT_OVERFLOW,
    KF_E_TRUNCATED_RECORD,
    KF_E_NEG_RECORD_LEN,
    KF_E_RECORD_BEYOND,
    KF_E_NEG_KEY_LEN,
    KF_E_KEY_BEYOND,
    KF_E_NEG_VALUE_LEN,
    KF_E_VALUE_BEYOND,
    KF_E_NEG_HEADER_COUNT,
    KF_E_HEADER_COUNT_BEYOND,
    KF_E_BAD_HEADER_KEY_LEN,
    KF_E_HEADER_KEY_BEYOND,
    KF_E_NEG_HEADER_VALUE_LEN,
    KF_E_HEADER_VALUE_BEYOND,
    KF_E_RECORD_SIZE_MISMATCH,
    KF_E_TRAILING_BYTES,
    KF_E_TOO_FEW_RECORDS,
    KF_E__COUNT
};

/* Read an unsigned base-128 varint of at most max_bytes that must fit in `bits` bits.
 * Returns the position after it, or NULL with *err set. */
static inline const uint8_t *kf_get_uvarint(const uint8_t *p, const uint8_t *end, int max_bytes,
                                            int bits, uint64_t *out, int *err) {
    if (p < end && !(*p & 0x80)) { /* one-byte fast path */
        *out = *p;
        return p + 1;
    }
    uint64_t u = 0;
    int shift = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (p >= end) {
            *err = KF_E_TRUNCATED_VARINT;
            return NULL;
        }
        uint8_t b = *p++;
        u |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            /* the last byte may not carry bits beyond the type */
            if (shift > 0 && bits - shift < 7 && (b >> (bits - shift))) {
                *err = KF_E_VARINT_OVERFLOW;
                return NULL;
            }
            *out = u;
            return p;
        }
        shift += 7;
    }
    *err = KF_E_VARINT_OVERFLOW;
    return NULL;
}
static inline const uint8_t *kf_get_varint32(const uint8_t *p, const uint8_t *end, int32_t *out,
                                             int *err) {
    uint64_t u;
    p = kf_get_uvarint(p, end, 5, 32, &u, err);
    if (p) *out = (int32_t)kf_unzigzag(u);
    return p;
}
static inline const uint8_t *kf_get_varint64(const uint8_t *p, const uint8_t *end, int64_t *out,
                                             int *err) {
    uint64_t u;
    p = kf_get_uvarint(p, end, 10, 64, &u, err);
    if (p) *out = kf_unzigzag(u);
    return p;
}

/* ---- encoding ---------------------------------------------------------------------------- */

enum { KF_COL_NULL = 0, KF_COL_PTRS = 1, KF_COL_ROWS = 2, KF_COL_PACKED = 3 };

/* Where the i-th key (or value) of a bulk encode comes from. */
typedef struct {
    int kind;
    const uint8_t *data;         /* ROWS, PACKED */
    int64_t width, stride;       /* ROWS */
    const int64_t *offsets;      /* PACKED: N+1 boundaries */
    const uint8_t *nulls;        /* PACKED: optional, nonzero = null */
    const uint8_t *const *ptrs;  /* PTRS */
    const int64_t *lens;         /* PTRS: -1 = null */
} kf_col;

static inline void kf_col_get(const kf_col *c, int64_t i, const uint8_t **p, int64_t *len) {
    switch (c->kind) {
    case KF_COL_PTRS:
        *p = c->ptrs[i];
        *len = c->lens[i];
        return;
    case KF_COL_ROWS:
        *p = c->data + i * c->stride;
        *len = c->width;
        return;
    case KF_COL_PACKED:
        if (c->nulls && c->nulls[i]) {
            *p = NULL;
            *len = -1;
        } else {
            *p = c->data + c->offsets[i];
            *len = c->offsets[i + 1] - c->offsets[i];
        }
        return;
    default:
        *p = NULL;
        *len = -1;
    }
}

/* Headers of a bulk encode: pre-encoded blobs (count varint + entries). Either one shared
 * blob (offsets == NULL) or N blobs data[offsets[i]:offsets[i+1]]. */
typedef struct {
    const uint8_t *data;
    int64_t len;
    const int64_t *offsets;
} kf_hdrs;

typedef struct {
    int64_t n;
    const kf_col *keys, *values;
    const int64_t *ts; /* NULL: every record has ts0 */
    int64_t ts0;
    int64_t first_ts;
    const kf_hdrs *hdrs;
    /* NULL, or n indices: record i is row rows[i] of the columns, timestamps and headers
     * (each checked by the caller to be within them) */
    const int64_t *rows;
} kf_bulk;

/* Size of one record body (everything after its length varint). */
static inline size_t kf_record_body_size(int64_t offset_delta, int64_t ts_delta, int64_t klen,
                                         int64_t vlen, int64_t hlen) {
    return 1 + kf_varint_size(ts_delta) + kf_varint_size(offset_delta) +
           (klen < 0 ? 1 : kf_varint_size(klen) + (size_t)klen) +
           (vlen < 0 ? 1 : kf_varint_size(vlen) + (size_t)vlen) + (size_t)hlen;
}

/* Write one record (length varint included) at p; returns the end. */
static inline uint8_t *kf_write_record(uint8_t *p, size_t body, int64_t offset_delta,
                                       int64_t ts_delta, const uint8_t *k, int64_t klen,
                                       const uint8_t *v, int64_t vlen, const uint8_t *h,
                                       int64_t hlen) {
    p = kf_put_varint(p, (int64_t)body);
    *p++ = 0; /* attributes */
    p = kf_put_varint(p, ts_delta);
    p = kf_put_varint(p, offset_delta);
    if (klen < 0) {
        *p++ = 1;
    } else {
        p = kf_put_varint(p, klen);
        memcpy(p, k, (size_t)klen);
        p += klen;
    }
    if (vlen < 0) {
        *p++ = 1;
    } else {
        p = kf_put_varint(p, vlen);
        memcpy(p, v, (size_t)vlen);
        p += vlen;
    }
    memcpy(p, h, (size_t)hlen);
    return p + hlen;
}

/* Exact encoded size of all records of a bulk encode; -1 if a field is longer than int32. */
int64_t kf_bulk_size(const kf_bulk *b);
/* Encode all records at out (kf_bulk_size bytes); returns bytes written. */
int64_t kf_bulk_write(const kf_bulk *b, uint8_t *out);
/* Max of the timestamps (ts0 when ts is NULL). */
int64_t kf_max_ts(const int64_t *ts, int64_t n, int64_t ts0);

/* Fill the 61-byte batch header (CRC left zero) and compute the CRC over buf[21:total). */
void kf_write_batch_header(uint8_t *buf, int64_t total, int64_t base_offset,
                           int32_t partition_leader_epoch, int16_t attributes,
                           int32_t last_offset_delta, int64_t first_ts, int64_t max_ts,
                           int64_t producer_id, int16_t producer_epoch, int32_t base_sequence,
                           int32_t count);
void kf_finish_crc(uint8_t *buf, int64_t total);

/* ---- decoding ---------------------------------------------------------------------------- */

/* One parsed record; key/value/headers point into the records buffer. */
typedef struct {
    int64_t ts_delta;
    int32_t offset_delta;
    int32_t klen, vlen; /* -1 = null */
    const uint8_t *key, *value;
    int32_t header_count;
    const uint8_t *headers, *end; /* headers: first header; end: record end */
} kf_rec;

/* Parse the record at *pp (bounded by end). On success *pp moves past it and KF_OK is
 * returned; otherwise an error code and *pp is the position of the fault. */
int kf_parse_record(const uint8_t **pp, const uint8_t *end, kf_rec *r);

/* Parse one header at *pp (bounded by end). */
int kf_parse_header(const uint8_t **pp, const uint8_t *end, const uint8_t **key, int32_t *klen,
                    const uint8_t **value, int32_t *vlen);

/* Columnar pass 1: parse `count` records in [p, end), store per-record fields. Returns
 * KF_OK or an error with *fault set. Sums key/value bytes and flags headers. */
typedef struct {
    int64_t *offsets, *timestamps;     /* N */
    int64_t *key_pos, *value_pos;      /* N: start in the records buffer */
    int64_t *key_ends, *value_ends;    /* N+1 cumulative (index 0 = 0) */
    uint8_t *key_nulls, *value_nulls;  /* N */
    int64_t key_bytes, value_bytes;
    int has_headers;
} kf_columns;
int kf_columns_parse(const uint8_t *start, const uint8_t *end, int32_t count, int64_t base_offset,
                     int64_t first_ts, int log_append, int64_t max_ts, kf_columns *c,
                     const uint8_t **fault);
/* Columnar pass 2: copy key and value bytes into their packed buffers. */
void kf_columns_copy(const uint8_t *start, int32_t count, const kf_columns *c, uint8_t *kdata,
                     uint8_t *vdata);

const char *kf_error_text(int code);

#endif
