/* Kafka RecordBatch v2 kernels (see kf_records.h). */
#include "kf_records.h"

#include "crc32c.h"

static inline void kf_hdr_get(const kf_hdrs *h, int64_t i, const uint8_t **p, int64_t *len) {
    if (h->offsets) {
        *p = h->data + h->offsets[i];
        *len = h->offsets[i + 1] - h->offsets[i];
    } else {
        *p = h->data;
        *len = h->len;
    }
}

int64_t kf_bulk_size(const kf_bulk *b) {
    int64_t total = 0;
    for (int64_t i = 0; i < b->n; i++) {
        const uint8_t *k, *v, *h;
        int64_t klen, vlen, hlen;
        const int64_t j = b->rows ? b->rows[i] : i;
        kf_col_get(b->keys, j, &k, &klen);
        kf_col_get(b->values, j, &v, &vlen);
        kf_hdr_get(b->hdrs, j, &h, &hlen);
        if (klen > INT32_MAX || vlen > INT32_MAX) return -1;
        int64_t ts = b->ts ? b->ts[j] : b->ts0;
        size_t body = kf_record_body_size(i, (int64_t)((uint64_t)ts - (uint64_t)b->first_ts),
                                          klen, vlen, hlen);
        total += (int64_t)(kf_uvarint_size(kf_zigzag((int64_t)body)) + body);
    }
    return total;
}

/* How many records ahead kf_bulk_write prefetches picked rows. */
#define KF_PICK_AHEAD 16

int64_t kf_bulk_write(const kf_bulk *b, uint8_t *out) {
    uint8_t *p = out;
    const int scattered = b->values->kind == KF_COL_PTRS;
    for (int64_t i = 0; i < b->n; i++) {
        const uint8_t *k, *v, *h;
        int64_t klen, vlen, hlen;
        if (scattered && i + 4 < b->n && b->values->ptrs[i + 4]) {
            /* separate objects: fetch the value a few records ahead */
            const uint8_t *ahead = b->values->ptrs[i + 4];
            __builtin_prefetch(ahead);
            if (b->values->lens[i + 4] > 64) __builtin_prefetch(ahead + 64);
        }
        const int64_t j = b->rows ? b->rows[i] : i;
        if (b->rows && i + KF_PICK_AHEAD < b->n) {
            /* rows picked out of the columns: fetch a later record's key and value ahead */
            const int64_t ahead = b->rows[i + KF_PICK_AHEAD];
            const uint8_t *pa;
            int64_t la;
            kf_col_get(b->values, ahead, &pa, &la);
            if (pa) {
                __builtin_prefetch(pa);
                if (la > 64) __builtin_prefetch(pa + 64);
            }
            kf_col_get(b->keys, ahead, &pa, &la);
            if (pa) __builtin_prefetch(pa);
        }
        kf_col_get(b->keys, j, &k, &klen);
        kf_col_get(b->values, j, &v, &vlen);
        kf_hdr_get(b->hdrs, j, &h, &hlen);
        int64_t ts = b->ts ? b->ts[j] : b->ts0;
        int64_t tsd = (int64_t)((uint64_t)ts - (uint64_t)b->first_ts);
        size_t body = kf_record_body_size(i, tsd, klen, vlen, hlen);
        p = kf_write_record(p, body, i, tsd, k, klen, v, vlen, h, hlen);
    }
    return (int64_t)(p - out);
}

int64_t kf_max_ts(const int64_t *ts, int64_t n, int64_t ts0) {
    if (!ts) return ts0;
    int64_t m = ts[0];
    for (int64_t i = 1; i < n; i++)
        if (ts[i] > m) m = ts[i];
    return m;
}

void kf_write_batch_header(uint8_t *buf, int64_t total, int64_t base_offset,
                           int32_t partition_leader_epoch, int16_t attributes,
                           int32_t last_offset_delta, int64_t first_ts, int64_t max_ts,
                           int64_t producer_id, int16_t producer_epoch, int32_t base_sequence,
                           int32_t count) {
    kf_store_be64(buf, (uint64_t)base_offset);
    kf_store_be32(buf + 8, (uint32_t)(total - KF_LOG_OVERHEAD));
    kf_store_be32(buf + 12, (uint32_t)partition_leader_epoch);
    buf[16] = 2;
    kf_store_be32(buf + 17, 0);
    kf_store_be16(buf + 21, (uint16_t)attributes);
    kf_store_be32(buf + 23, (uint32_t)last_offset_delta);
    kf_store_be64(buf + 27, (uint64_t)first_ts);
    kf_store_be64(buf + 35, (uint64_t)max_ts);
    kf_store_be64(buf + 43, (uint64_t)producer_id);
    kf_store_be16(buf + 51, (uint16_t)producer_epoch);
    kf_store_be32(buf + 53, (uint32_t)base_sequence);
    kf_store_be32(buf + 57, (uint32_t)count);
}

void kf_finish_crc(uint8_t *buf, int64_t total) {
    kf_store_be32(buf + 17, kf_crc32c(0, buf + KF_CRC_START, (size_t)(total - KF_CRC_START)));
}

/* ---- decoding ---------------------------------------------------------------------------- */

#define FAIL(code)       \
    do {                 \
        *pp = p;         \
        return (code);   \
    } while (0)

int kf_parse_header(const uint8_t **pp, const uint8_t *end, const uint8_t **key, int32_t *klen,
                    const uint8_t **value, int32_t *vlen) {
    const uint8_t *p = *pp, *q;
    int err = KF_OK;
    int32_t n;
    if (!(q = kf_get_varint32(p, end, &n, &err))) FAIL(err);
    if (n < 0) FAIL(KF_E_BAD_HEADER_KEY_LEN);
    if (n > end - q) FAIL(KF_E_HEADER_KEY_BEYOND);
    p = q;
    *key = p;
    *klen = n;
    p += n;
    if (!(q = kf_get_varint32(p, end, &n, &err))) FAIL(err);
    if (n < -1) FAIL(KF_E_NEG_HEADER_VALUE_LEN);
    if (n > end - q) FAIL(KF_E_HEADER_VALUE_BEYOND);
    p = q;
    *value = n < 0 ? NULL : p;
    *vlen = n;
    if (n > 0) p += n;
    *pp = p;
    return KF_OK;
}

int kf_parse_record(const uint8_t **pp, const uint8_t *end, kf_rec *r) {
    const uint8_t *p = *pp, *q;
    int err = KF_OK;
    int32_t len, n;
    if (p >= end) FAIL(KF_E_TOO_FEW_RECORDS);
    if (!(q = kf_get_varint32(p, end, &len, &err))) FAIL(err);
    if (len < 0) FAIL(KF_E_NEG_RECORD_LEN);
    if (len > end - q) FAIL(KF_E_RECORD_BEYOND);
    p = q;
    const uint8_t *rend = p + len;
    if (p >= rend) FAIL(KF_E_TRUNCATED_RECORD);
    p++; /* attributes */
    if (!(q = kf_get_varint64(p, rend, &r->ts_delta, &err))) FAIL(err);
    p = q;
    if (!(q = kf_get_varint32(p, rend, &r->offset_delta, &err))) FAIL(err);
    p = q;
    if (!(q = kf_get_varint32(p, rend, &n, &err))) FAIL(err);
    if (n < -1) FAIL(KF_E_NEG_KEY_LEN);
    if (n > rend - q) FAIL(KF_E_KEY_BEYOND);
    p = q;
    r->klen = n;
    r->key = p;
    if (n > 0) p += n;
    if (!(q = kf_get_varint32(p, rend, &n, &err))) FAIL(err);
    if (n < -1) FAIL(KF_E_NEG_VALUE_LEN);
    if (n > rend - q) FAIL(KF_E_VALUE_BEYOND);
    p = q;
    r->vlen = n;
    r->value = p;
    if (n > 0) p += n;
    if (!(q = kf_get_varint32(p, rend, &n, &err))) FAIL(err);
    if (n < 0) FAIL(KF_E_NEG_HEADER_COUNT);
    if ((int64_t)n * 2 > rend - q) FAIL(KF_E_HEADER_COUNT_BEYOND);
    p = q;
    r->header_count = n;
    r->headers = p;
    for (int32_t i = 0; i < n; i++) {
        const uint8_t *hk, *hv;
        int32_t hkl, hvl;
        int e = kf_parse_header(&p, rend, &hk, &hkl, &hv, &hvl);
        if (e != KF_OK) FAIL(e);
    }
    if (p != rend) FAIL(KF_E_RECORD_SIZE_MISMATCH);
    r->end = rend;
    *pp = rend;
    return KF_OK;
}

int kf_columns_parse(const uint8_t *start, const uint8_t *end, int32_t count, int64_t base_offset,
                     int64_t first_ts, int log_append, int64_t max_ts, kf_columns *c,
                     const uint8_t **fault) {
    const uint8_t *p = start;
    int64_t kb = 0, vb = 0;
    int has_headers = 0;
    kf_rec r;
    c->key_ends[0] = 0;
    c->value_ends[0] = 0;
    for (int32_t i = 0; i < count; i++) {
        int e = kf_parse_record(&p, end, &r);
        if (e != KF_OK) {
            *fault = p;
            return e;
        }
        c->offsets[i] = (int64_t)((uint64_t)base_offset + (uint64_t)(int64_t)r.offset_delta);
        c->timestamps[i] =
            log_append ? max_ts : (int64_t)((uint64_t)first_ts + (uint64_t)r.ts_delta);
        if (r.klen < 0) {
            c->key_nulls[i] = 1;
        } else {
            c->key_nulls[i] = 0;
            c->key_pos[i] = r.key - start;
            kb += r.klen;
        }
        c->key_ends[i + 1] = kb;
        if (r.vlen < 0) {
            c->value_nulls[i] = 1;
        } else {
            c->value_nulls[i] = 0;
            c->value_pos[i] = r.value - start;
            vb += r.vlen;
        }
        c->value_ends[i + 1] = vb;
        has_headers |= r.header_count != 0;
    }
    if (p != end) {
        *fault = p;
        return KF_E_TRAILING_BYTES;
    }
    c->key_bytes = kb;
    c->value_bytes = vb;
    c->has_headers = has_headers;
    return KF_OK;
}

void kf_columns_copy(const uint8_t *start, int32_t count, const kf_columns *c, uint8_t *kdata,
                     uint8_t *vdata) {
    for (int32_t i = 0; i < count; i++) {
        int64_t kl = c->key_ends[i + 1] - c->key_ends[i];
        if (kl) memcpy(kdata + c->key_ends[i], start + c->key_pos[i], (size_t)kl);
        int64_t vl = c->value_ends[i + 1] - c->value_ends[i];
        if (vl) memcpy(vdata + c->value_ends[i], start + c->value_pos[i], (size_t)vl);
    }
}

const char *kf_error_text(int code) {
    static const char *const text[KF_E__COUNT] = {
        "ok",
        "truncated varint",
        "varint overflows its type",
        "truncated record",
        "negative record length",
        "record length beyond the batch",
        "negative key length",
        "key length beyond the record",
        "negative value length",
        "value length beyond the record",
        "negative header count",
        "header count beyond the record",
        "bad header key length",
        "header key length beyond the record",
        "negative header value length",
        "header value length beyond the record",
        "record length does not match its fields",
        "bytes left after the records the batch declares",
        "truncated record: fewer records than the batch declares",
    };
    return code >= 0 && code < KF_E__COUNT ? text[code] : "corrupt record";
}
