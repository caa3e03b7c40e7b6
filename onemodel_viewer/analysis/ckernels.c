/* Compiled kernels for the byte-crunching loops of the statistics and the weight diff.
 *
 * Each function reads one contiguous block of bytes (any alignment, read-only buffers welcome),
 * releases the GIL for the loop, and sums in a fixed order (lanes of LANES, then the lanes in
 * order), so a block gives the same bits on every machine and run. The callers cut tensors into a
 * fixed grid of blocks and merge the blocks' results in block order (numpy's implementations in
 * stats/ and diff/ are the reference the tests check these against).
 *
 * Element kinds (the wrapper onemodel_viewer.analysis.kernels maps numpy dtypes to them):
 *   0 float16, 1 bfloat16, 2 float32, 3 float64, 4 int8, 5 uint8, 6 int16, 7 uint16,
 *   8 int32, 9 uint32, 10 int64, 11 uint64.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

enum { K_F16, K_BF16, K_F32, K_F64, K_I8, K_U8, K_I16, K_U16, K_I32, K_U32, K_I64, K_U64, K_COUNT };
static const int ITEM[K_COUNT] = {2, 2, 4, 8, 1, 1, 2, 2, 4, 4, 8, 8};

#define LANES 8
#define TILE 256 /* elements summed in LANES lanes before the lanes go into the running sums */
#define TILES 256 /* tiles added up before that sum goes into the total: three levels, error ~ eps * (32 + 256 + n / 2^16) */

/* A float64 sum in three levels (see TILE): add(x) per lane, tile_end() after each tile. */
typedef struct { double lane[LANES], mid[LANES], top[LANES]; int tiles; } Acc;

static inline void acc_tile_end(Acc *a) {
    for (int j = 0; j < LANES; j++) { a->mid[j] += a->lane[j]; a->lane[j] = 0; }
    if (++a->tiles == TILES) {
        for (int j = 0; j < LANES; j++) { a->top[j] += a->mid[j]; a->mid[j] = 0; }
        a->tiles = 0;
    }
}

static inline double acc_total(Acc *a) {
    double t = 0;
    for (int j = 0; j < LANES; j++) t += a->top[j] + (a->mid[j] + a->lane[j]);
    return t;
}

static inline uint16_t ld16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t ld32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t ld64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline float ldf(const unsigned char *p) { float v; memcpy(&v, p, 4); return v; }
static inline double ldd(const unsigned char *p) { double v; memcpy(&v, p, 8); return v; }

/* float16 bits -> float (exact; NaN/Inf kept as NaN/Inf). */
static inline float f16_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t em = h & 0x7fffu;
    float f;
    if (em >= 0x7c00u) { /* Inf/NaN: exponent all ones, payload moved up */
        uint32_t u = sign | 0x7f800000u | ((em & 0x3ffu) << 13);
        memcpy(&f, &u, 4);
        return f;
    }
    /* finite: move exponent and mantissa up, rescale by 2^112 (subnormals come out exact) */
    uint32_t u = em << 13;
    memcpy(&f, &u, 4);
    f *= 5.192296858534828e+33f; /* 2^112 */
    return sign ? -f : f;
}

static inline float bf16_to_float(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int get_buffer(PyObject *obj, Py_buffer *view, int writable) {
    return PyObject_GetBuffer(obj, view, writable ? (PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) : PyBUF_C_CONTIGUOUS);
}

static int check_kind(int kind) {
    if (kind < 0 || kind >= K_COUNT) {
        PyErr_SetString(PyExc_ValueError, "unknown element kind");
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ count16 */

/* count16(data, out): add the occurrences of each uint16 value of data (little endian) into out (65,536 int64). */
static PyObject *k_count16(PyObject *self, PyObject *args) {
    PyObject *src, *dst;
    if (!PyArg_ParseTuple(args, "OO", &src, &dst)) return NULL;
    Py_buffer in, out;
    if (get_buffer(src, &in, 0) < 0) return NULL;
    if (get_buffer(dst, &out, 1) < 0) { PyBuffer_Release(&in); return NULL; }
    if (out.len != 65536 * 8) {
        PyBuffer_Release(&in); PyBuffer_Release(&out);
        PyErr_SetString(PyExc_ValueError, "out must hold 65,536 int64");
        return NULL;
    }
    uint32_t *t = NULL;
    Py_ssize_t n = in.len / 2;
    if (n > 0) {
        t = (uint32_t *)calloc(2 * 65536, sizeof(uint32_t));
        if (t == NULL) { PyBuffer_Release(&in); PyBuffer_Release(&out); return PyErr_NoMemory(); }
    }
    const unsigned char *p = (const unsigned char *)in.buf;
    int64_t *acc = (int64_t *)out.buf;
    Py_BEGIN_ALLOW_THREADS
    if (n > 0) {
        /* two tables (even/odd elements) so that runs of one value do not wait on one counter;
           flushed before a uint32 can wrap */
        uint32_t *t0 = t, *t1 = t + 65536;
        Py_ssize_t i = 0;
        while (i < n) {
            Py_ssize_t end = n - i > ((Py_ssize_t)1 << 30) ? i + ((Py_ssize_t)1 << 30) : n;
            Py_ssize_t pairs_end = i + ((end - i) & ~(Py_ssize_t)1);
            for (; i < pairs_end; i += 2) {
                t0[ld16(p + 2 * i)]++;
                t1[ld16(p + 2 * i + 2)]++;
            }
            if (i < end) { t0[ld16(p + 2 * i)]++; i++; }
            for (int k = 0; k < 65536; k++) {
                acc[k] += (int64_t)t0[k] + (int64_t)t1[k];
                t0[k] = t1[k] = 0;
            }
        }
    }
    Py_END_ALLOW_THREADS
    free(t);
    PyBuffer_Release(&in);
    PyBuffer_Release(&out);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ figures */

typedef struct {
    int64_t n, zeros, nan, posinf, neginf;
    double s, m2;
    double flo, fhi;      /* float kinds */
    int64_t ilo, ihi;     /* signed kinds */
    uint64_t ulo, uhi;    /* unsigned kinds */
    int dirty, any;
} Figs;

/* Second pass over the finite values: (Σx, Σ(x − x̄)²) from the first pass's sum (Chan's form within a block). */
#define CENTRED(LOAD, FINITE)                                                                     \
    do {                                                                                          \
        if (!isfinite(f->s)) { f->s = NAN; f->m2 = INFINITY; break; }                             \
        double m = f->s / (double)f->n;                                                           \
        Acc sd = {{0}}, dd = {{0}};                                                               \
        for (Py_ssize_t t = 0; t < n; t += TILE) {                                                \
            Py_ssize_t e = n - t < TILE ? n : t + TILE, i = t;                                    \
            if (!f->dirty)                                                                        \
                for (; i + LANES <= e; i += LANES)                                                \
                    for (int j = 0; j < LANES; j++) {                                             \
                        double d = (double)LOAD(p + (i + j) * W) - m;                             \
                        sd.lane[j] += d; dd.lane[j] += d * d;                                     \
                    }                                                                             \
            for (; i < e; i++) {                                                                  \
                double v = (double)LOAD(p + i * W);                                               \
                if (!(FINITE)) continue;                                                          \
                double d = v - m;                                                                 \
                sd.lane[0] += d; dd.lane[0] += d * d;                                             \
            }                                                                                     \
            acc_tile_end(&sd); acc_tile_end(&dd);                                                 \
        }                                                                                         \
        double tsd = acc_total(&sd), tdd = acc_total(&dd);                                        \
        f->s = (double)f->n * m + tsd;                                                            \
        f->m2 = isfinite(tdd) ? fmax(0.0, tdd - tsd * tsd / (double)f->n) : INFINITY;             \
    } while (0)

#define FLOAT_FIGS(T, LOAD, BIG)                                                                  \
    do {                                                                                          \
        const Py_ssize_t W = sizeof(T);                                                           \
        Acc s = {{0}};                                                                            \
        T lo[LANES], hi[LANES];                                                                   \
        int64_t z[LANES] = {0}, bad[LANES] = {0};                                                 \
        for (int j = 0; j < LANES; j++) { lo[j] = (T)INFINITY; hi[j] = (T)-INFINITY; }            \
        for (Py_ssize_t t = 0; t < n; t += TILE) {                                                \
            Py_ssize_t e = n - t < TILE ? n : t + TILE, i = t;                                    \
            for (; i + LANES <= e; i += LANES)                                                    \
                for (int j = 0; j < LANES; j++) {                                                 \
                    T v = LOAD(p + (i + j) * W);                                                  \
                    s.lane[j] += (double)v;                                                       \
                    lo[j] = v < lo[j] ? v : lo[j];                                                \
                    hi[j] = v > hi[j] ? v : hi[j];                                                \
                    z[j] += (v == 0);                                                             \
                    bad[j] += !(fabs((double)v) <= BIG);                                          \
                }                                                                                 \
            for (; i < e; i++) {                                                                  \
                T v = LOAD(p + i * W);                                                            \
                s.lane[0] += (double)v;                                                           \
                lo[0] = v < lo[0] ? v : lo[0];                                                    \
                hi[0] = v > hi[0] ? v : hi[0];                                                    \
                z[0] += (v == 0);                                                                 \
                bad[0] += !(fabs((double)v) <= BIG);                                              \
            }                                                                                     \
            acc_tile_end(&s);                                                                     \
        }                                                                                         \
        int64_t nbad = 0;                                                                         \
        for (int j = 0; j < LANES; j++) nbad += bad[j];                                           \
        if (nbad == 0) {                                                                          \
            T tl = lo[0], th = hi[0]; int64_t tz = 0;                                             \
            for (int j = 0; j < LANES; j++) {                                                     \
                tz += z[j];                                                                       \
                tl = lo[j] < tl ? lo[j] : tl; th = hi[j] > th ? hi[j] : th;                       \
            }                                                                                     \
            f->n = n; f->s = acc_total(&s); f->zeros = tz; f->flo = tl; f->fhi = th; f->any = n > 0; \
        } else {                                                                                  \
            Acc ts = {{0}}; T tl = (T)INFINITY, th = (T)-INFINITY; int64_t tz = 0, nf = 0;        \
            f->dirty = 1;                                                                         \
            for (Py_ssize_t t = 0; t < n; t += TILE) {                                            \
                Py_ssize_t e = n - t < TILE ? n : t + TILE;                                       \
                for (Py_ssize_t i = t; i < e; i++) {                                              \
                    T v = LOAD(p + i * W);                                                        \
                    if (isnan(v)) { f->nan++; continue; }                                         \
                    if (v == (T)INFINITY) { f->posinf++; continue; }                              \
                    if (v == (T)-INFINITY) { f->neginf++; continue; }                             \
                    nf++; ts.lane[0] += (double)v; tz += (v == 0);                                \
                    tl = v < tl ? v : tl; th = v > th ? v : th;                                   \
                }                                                                                 \
                acc_tile_end(&ts);                                                                \
            }                                                                                     \
            f->n = nf; f->s = acc_total(&ts); f->zeros = tz; f->flo = tl; f->fhi = th; f->any = nf > 0; \
        }                                                                                         \
        if (f->n > 0) CENTRED(LOAD, isfinite(v));                                                 \
    } while (0)

#define INT_FIGS(T, LOAD, LOF, HIF)                                                               \
    do {                                                                                          \
        const Py_ssize_t W = sizeof(T);                                                           \
        Acc s = {{0}};                                                                            \
        T lo[LANES], hi[LANES];                                                                   \
        int64_t z[LANES] = {0};                                                                   \
        T first = LOAD(p);                                                                        \
        for (int j = 0; j < LANES; j++) { lo[j] = first; hi[j] = first; }                        \
        for (Py_ssize_t t = 0; t < n; t += TILE) {                                                \
            Py_ssize_t e = n - t < TILE ? n : t + TILE, i = t;                                    \
            for (; i + LANES <= e; i += LANES)                                                    \
                for (int j = 0; j < LANES; j++) {                                                 \
                    T v = LOAD(p + (i + j) * W);                                                  \
                    s.lane[j] += (double)v;                                                       \
                    lo[j] = v < lo[j] ? v : lo[j];                                                \
                    hi[j] = v > hi[j] ? v : hi[j];                                                \
                    z[j] += (v == 0);                                                             \
                }                                                                                 \
            for (; i < e; i++) {                                                                  \
                T v = LOAD(p + i * W);                                                            \
                s.lane[0] += (double)v;                                                           \
                lo[0] = v < lo[0] ? v : lo[0];                                                    \
                hi[0] = v > hi[0] ? v : hi[0];                                                    \
                z[0] += (v == 0);                                                                 \
            }                                                                                     \
            acc_tile_end(&s);                                                                     \
        }                                                                                         \
        T tl = lo[0], th = hi[0]; int64_t tz = 0;                                                 \
        for (int j = 0; j < LANES; j++) {                                                         \
            tz += z[j];                                                                           \
            tl = lo[j] < tl ? lo[j] : tl; th = hi[j] > th ? hi[j] : th;                           \
        }                                                                                         \
        f->n = n; f->s = acc_total(&s); f->zeros = tz; f->LOF = tl; f->HIF = th; f->any = 1;      \
        CENTRED(LOAD, 1);                                                                         \
    } while (0)

#define L_I8(q) ((int8_t)(q)[0])
#define L_U8(q) ((uint8_t)(q)[0])
#define L_I16(q) ((int16_t)ld16(q))
#define L_U16(q) (ld16(q))
#define L_I32(q) ((int32_t)ld32(q))
#define L_U32(q) (ld32(q))
#define L_I64(q) ((int64_t)ld64(q))
#define L_U64(q) (ld64(q))

static void figures(const unsigned char *p, Py_ssize_t n, int kind, Figs *f) {
    memset(f, 0, sizeof *f);
    f->flo = f->fhi = 0.0;
    if (n == 0) return;
    switch (kind) {
    case K_F32: FLOAT_FIGS(float, ldf, (double)FLT_MAX); break;
    case K_F64: FLOAT_FIGS(double, ldd, DBL_MAX); break;
    case K_I8: INT_FIGS(int8_t, L_I8, ilo, ihi); break;
    case K_U8: INT_FIGS(uint8_t, L_U8, ulo, uhi); break;
    case K_I16: INT_FIGS(int16_t, L_I16, ilo, ihi); break;
    case K_U16: INT_FIGS(uint16_t, L_U16, ulo, uhi); break;
    case K_I32: INT_FIGS(int32_t, L_I32, ilo, ihi); break;
    case K_U32: INT_FIGS(uint32_t, L_U32, ulo, uhi); break;
    case K_I64: INT_FIGS(int64_t, L_I64, ilo, ihi); break;
    case K_U64: INT_FIGS(uint64_t, L_U64, ulo, uhi); break;
    }
}

/* figures(data, kind) -> (n, s, lo, hi, zeros, nan, posinf, neginf, dirty, m2) of one block of real values:
   n finite values, their sum and squared deviations from their mean (float64), lo/hi None without finite values. */
static PyObject *k_figures(PyObject *self, PyObject *args) {
    PyObject *src;
    int kind;
    if (!PyArg_ParseTuple(args, "Oi", &src, &kind)) return NULL;
    if (!check_kind(kind)) return NULL;
    if (kind == K_F16 || kind == K_BF16) {
        PyErr_SetString(PyExc_ValueError, "16-bit floats take count16");
        return NULL;
    }
    Py_buffer in;
    if (get_buffer(src, &in, 0) < 0) return NULL;
    Py_ssize_t n = in.len / ITEM[kind];
    const unsigned char *p = (const unsigned char *)in.buf;
    Figs fg, *f = &fg;
    Py_BEGIN_ALLOW_THREADS
    figures(p, n, kind, f);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&in);
    PyObject *lo, *hi;
    if (!f->any) {
        lo = Py_None; hi = Py_None;
        Py_INCREF(lo); Py_INCREF(hi);
    } else if (kind == K_F32 || kind == K_F64) {
        lo = PyFloat_FromDouble(f->flo); hi = PyFloat_FromDouble(f->fhi);
    } else if (kind == K_U8 || kind == K_U16 || kind == K_U32 || kind == K_U64) {
        lo = PyLong_FromUnsignedLongLong(f->ulo); hi = PyLong_FromUnsignedLongLong(f->uhi);
    } else {
        lo = PyLong_FromLongLong(f->ilo); hi = PyLong_FromLongLong(f->ihi);
    }
    if (lo == NULL || hi == NULL) { Py_XDECREF(lo); Py_XDECREF(hi); return NULL; }
    return Py_BuildValue("(LdNNLLLLNd)", (long long)f->n, f->s, lo, hi, (long long)f->zeros, (long long)f->nan,
                         (long long)f->posinf, (long long)f->neginf, PyBool_FromLong(f->dirty), f->m2);
}

/* ------------------------------------------------------------------ hist32 */

/* The bin, as the numpy Binner computes it: float32 arithmetic (mode 0), float64 (mode 1), float64 with the
   range halved (mode 2); a non-finite norm divides by (hi - lo) and multiplies by 32. Indices above 32 are
   dropped, 32 folds into 31 (the closed last bin). Non-finite values are skipped. */
#define HIST_LOOP(T, LOAD, FIN, BIN)                                                              \
    do {                                                                                          \
        const Py_ssize_t W = sizeof(T);                                                           \
        for (Py_ssize_t i = 0; i < n; i++) {                                                      \
            T v = LOAD(p + i * W);                                                                \
            if (!(FIN)) continue;                                                                 \
            unsigned idx = (unsigned)(unsigned char)(BIN);                                        \
            c[idx < 34 ? idx : 33]++;                                                             \
        }                                                                                         \
    } while (0)

static inline unsigned char bin64(double x, int wide, double lo, double norm, double hi) {
    double t;
    if (wide) t = x * 0.5 - lo * 0.5;
    else t = x - lo;
    if (isfinite(norm)) t = t * norm;
    else { t = t / (hi - lo); t = t * 32.0; }
    return (unsigned char)t;
}

static PyObject *k_hist32(PyObject *self, PyObject *args) {
    PyObject *src, *dst;
    int kind, mode;
    double lo, norm, hi;
    if (!PyArg_ParseTuple(args, "OiidddO", &src, &kind, &mode, &lo, &norm, &hi, &dst)) return NULL;
    if (!check_kind(kind)) return NULL;
    if (kind == K_F16 || kind == K_BF16 || (mode == 0 && kind != K_F32)) {
        PyErr_SetString(PyExc_ValueError, "unsupported kind for hist32");
        return NULL;
    }
    Py_buffer in, out;
    if (get_buffer(src, &in, 0) < 0) return NULL;
    if (get_buffer(dst, &out, 1) < 0) { PyBuffer_Release(&in); return NULL; }
    if (out.len != 32 * 8) {
        PyBuffer_Release(&in); PyBuffer_Release(&out);
        PyErr_SetString(PyExc_ValueError, "out must hold 32 int64");
        return NULL;
    }
    Py_ssize_t n = in.len / ITEM[kind];
    const unsigned char *p = (const unsigned char *)in.buf;
    int64_t *acc = (int64_t *)out.buf;
    int wide = mode == 2;
    Py_BEGIN_ALLOW_THREADS
    int64_t c[34] = {0};
    if (mode == 0) {
        float lo32 = (float)lo, norm32 = (float)norm;
        HIST_LOOP(float, ldf, isfinite(v), (v - lo32) * norm32);
    } else {
        switch (kind) {
        case K_F32: HIST_LOOP(float, ldf, isfinite(v), bin64((double)v, wide, lo, norm, hi)); break;
        case K_F64: HIST_LOOP(double, ldd, isfinite(v), bin64(v, wide, lo, norm, hi)); break;
        case K_I8: HIST_LOOP(int8_t, L_I8, 1, bin64((double)v, wide, lo, norm, hi)); break;
        case K_U8: HIST_LOOP(uint8_t, L_U8, 1, bin64((double)v, wide, lo, norm, hi)); break;
        case K_I16: HIST_LOOP(int16_t, L_I16, 1, bin64((double)v, wide, lo, norm, hi)); break;
        case K_U16: HIST_LOOP(uint16_t, L_U16, 1, bin64((double)v, wide, lo, norm, hi)); break;
        case K_I32: HIST_LOOP(int32_t, L_I32, 1, bin64((double)v, wide, lo, norm, hi)); break;
        case K_U32: HIST_LOOP(uint32_t, L_U32, 1, bin64((double)v, wide, lo, norm, hi)); break;
        case K_I64: HIST_LOOP(int64_t, L_I64, 1, bin64((double)v, wide, lo, norm, hi)); break;
        case K_U64: HIST_LOOP(uint64_t, L_U64, 1, bin64((double)v, wide, lo, norm, hi)); break;
        }
    }
    for (int k = 0; k < 31; k++) acc[k] += c[k];
    acc[31] += c[31] + c[32];
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&in);
    PyBuffer_Release(&out);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ diff */

typedef struct {
    int64_t differing, first, nonfinite, finite;
    double aa, bb, ab, dd, sabs, max_abs, max_rel;
    uint64_t imax; /* integers: largest |b - a| */
} Diff;

/* Float pairs: bit patterns compared; sums over the pairs where both sides are finite, in float64. */
#define FLOAT_DIFF(BITS_T, LDB, TOF, FINB)                                                        \
    do {                                                                                          \
        const Py_ssize_t W = sizeof(BITS_T);                                                      \
        double aa[LANES] = {0}, bb[LANES] = {0}, ab[LANES] = {0}, dd[LANES] = {0}, sa[LANES] = {0}; \
        double mx[LANES] = {0}, mr[LANES] = {0};                                                  \
        int64_t ne[LANES] = {0}, fin[LANES] = {0};                                                \
        int any_rel = 0;                                                                          \
        for (Py_ssize_t i = 0; i < n; i += 1024) {                                                \
            Py_ssize_t e = n - i < 1024 ? n : i + 1024;                                           \
            int64_t bad = 0, cnt = 0;                                                             \
            for (Py_ssize_t k = i; k < e; k++) {                                                  \
                BITS_T ua = LDB(pa + k * W), ub = LDB(pb + k * W);                                \
                bad += !(FINB(ua)) | !(FINB(ub));                                                 \
                cnt += ua != ub;                                                                  \
            }                                                                                     \
            if (cnt && r->first < 0)                                                              \
                for (Py_ssize_t k = i; k < e; k++)                                                \
                    if (LDB(pa + k * W) != LDB(pb + k * W)) { r->first = k; break; }              \
            r->differing += cnt;                                                                  \
            Py_ssize_t k = i;                                                                     \
            if (!bad) {                                                                           \
                for (; k + LANES <= e; k += LANES)                                                \
                    for (int j = 0; j < LANES; j++) {                                             \
                        double a = (double)TOF(LDB(pa + (k + j) * W));                            \
                        double b = (double)TOF(LDB(pb + (k + j) * W));                            \
                        double d = b - a, ad = fabs(d), m = fmax(fabs(a), fabs(b));               \
                        aa[j] += a * a; bb[j] += b * b; ab[j] += a * b; dd[j] += d * d;           \
                        sa[j] += ad; mx[j] = ad > mx[j] ? ad : mx[j];                             \
                        double rel = m > 0 ? ad / m : 0.0;                                        \
                        mr[j] = rel > mr[j] ? rel : mr[j];                                        \
                        any_rel |= m > 0;                                                         \
                    }                                                                             \
                fin[0] += k - i;                                                                  \
            }                                                                                     \
            for (; k < e; k++) {                                                                  \
                BITS_T ua = LDB(pa + k * W), ub = LDB(pb + k * W);                                \
                if (!(FINB(ua)) || !(FINB(ub))) { r->nonfinite++; continue; }                     \
                double a = (double)TOF(ua), b = (double)TOF(ub);                                  \
                double d = b - a, ad = fabs(d), m = fmax(fabs(a), fabs(b));                       \
                aa[0] += a * a; bb[0] += b * b; ab[0] += a * b; dd[0] += d * d;                   \
                sa[0] += ad; mx[0] = ad > mx[0] ? ad : mx[0];                                     \
                if (m > 0) { double rel = ad / m; mr[0] = rel > mr[0] ? rel : mr[0]; any_rel = 1; } \
                fin[0]++;                                                                         \
            }                                                                                     \
        }                                                                                         \
        (void)ne;                                                                                 \
        for (int j = 0; j < LANES; j++) {                                                         \
            r->aa += aa[j]; r->bb += bb[j]; r->ab += ab[j]; r->dd += dd[j]; r->sabs += sa[j];     \
            r->max_abs = mx[j] > r->max_abs ? mx[j] : r->max_abs;                                 \
            r->max_rel = mr[j] > r->max_rel ? mr[j] : r->max_rel;                                 \
            r->finite += fin[j];                                                                  \
        }                                                                                         \
        if (!any_rel) r->max_rel = NAN;                                                           \
    } while (0)

#define INT_DIFF(T, LOAD)                                                                         \
    do {                                                                                          \
        const Py_ssize_t W = sizeof(T);                                                           \
        for (Py_ssize_t k = 0; k < n; k++) {                                                      \
            T a = LOAD(pa + k * W), b = LOAD(pb + k * W);                                         \
            if (a == b) continue;                                                                 \
            if (r->first < 0) r->first = k;                                                       \
            r->differing++;                                                                       \
            uint64_t d = a > b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;           \
            r->imax = d > r->imax ? d : r->imax;                                                  \
        }                                                                                         \
    } while (0)

#define FIN16(u) (((u) & 0x7c00u) != 0x7c00u)
#define FINBF(u) (((u) & 0x7f80u) != 0x7f80u)
#define FIN32(u) (((u) & 0x7f800000u) != 0x7f800000u)
#define FIN64(u) (((u) & 0x7ff0000000000000ull) != 0x7ff0000000000000ull)
static inline float U32F(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline double U64D(uint64_t u) { double f; memcpy(&f, &u, 8); return f; }

static void diff(const unsigned char *pa, const unsigned char *pb, Py_ssize_t n, int kind, Diff *r) {
    memset(r, 0, sizeof *r);
    r->first = -1;
    switch (kind) {
    case K_F16: FLOAT_DIFF(uint16_t, ld16, f16_to_float, FIN16); break;
    case K_BF16: FLOAT_DIFF(uint16_t, ld16, bf16_to_float, FINBF); break;
    case K_F32: FLOAT_DIFF(uint32_t, ld32, U32F, FIN32); break;
    case K_F64: FLOAT_DIFF(uint64_t, ld64, U64D, FIN64); break;
    case K_I8: INT_DIFF(int8_t, L_I8); break;
    case K_U8: INT_DIFF(uint8_t, L_U8); break;
    case K_I16: INT_DIFF(int16_t, L_I16); break;
    case K_U16: INT_DIFF(uint16_t, L_U16); break;
    case K_I32: INT_DIFF(int32_t, L_I32); break;
    case K_U32: INT_DIFF(uint32_t, L_U32); break;
    case K_I64: INT_DIFF(int64_t, L_I64); break;
    case K_U64: INT_DIFF(uint64_t, L_U64); break;
    }
}

/* diff(a, b, kind) -> (differing, first or -1, nonfinite, finite, aa, bb, ab, dd, abs, max_abs, max_rel)
   of two equally long blocks. Integers: max_abs is an exact int and the sums are 0; floats: max_rel is NaN
   when every finite pair is two zeros (or there is none). */
static PyObject *k_diff(PyObject *self, PyObject *args) {
    PyObject *sa, *sb;
    int kind;
    if (!PyArg_ParseTuple(args, "OOi", &sa, &sb, &kind)) return NULL;
    if (!check_kind(kind)) return NULL;
    Py_buffer a, b;
    if (get_buffer(sa, &a, 0) < 0) return NULL;
    if (get_buffer(sb, &b, 0) < 0) { PyBuffer_Release(&a); return NULL; }
    if (a.len != b.len) {
        PyBuffer_Release(&a); PyBuffer_Release(&b);
        PyErr_SetString(PyExc_ValueError, "blocks of different lengths");
        return NULL;
    }
    Py_ssize_t n = a.len / ITEM[kind];
    Diff r;
    Py_BEGIN_ALLOW_THREADS
    diff((const unsigned char *)a.buf, (const unsigned char *)b.buf, n, kind, &r);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    PyObject *mx = kind <= K_F64 ? PyFloat_FromDouble(r.max_abs) : PyLong_FromUnsignedLongLong(r.imax);
    if (mx == NULL) return NULL;
    return Py_BuildValue("(LLLLdddddNd)", (long long)r.differing, (long long)r.first, (long long)r.nonfinite,
                         (long long)r.finite, r.aa, r.bb, r.ab, r.dd, r.sabs, mx, r.max_rel);
}

/* ------------------------------------------------------------------ equal */

/* equal(a, b) -> whether two buffers hold the same bytes. */
static PyObject *k_equal(PyObject *self, PyObject *args) {
    PyObject *sa, *sb;
    if (!PyArg_ParseTuple(args, "OO", &sa, &sb)) return NULL;
    Py_buffer a, b;
    if (get_buffer(sa, &a, 0) < 0) return NULL;
    if (get_buffer(sb, &b, 0) < 0) { PyBuffer_Release(&a); return NULL; }
    int same = a.len == b.len;
    if (same && a.len) {
        Py_BEGIN_ALLOW_THREADS
        same = memcmp(a.buf, b.buf, (size_t)a.len) == 0;
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    return PyBool_FromLong(same);
}

static PyMethodDef methods[] = {
    {"count16", k_count16, METH_VARARGS, "count16(data, out): add uint16 value counts into out (65,536 int64)."},
    {"figures", k_figures, METH_VARARGS, "figures(data, kind) -> pass-1 statistics of one block."},
    {"hist32", k_hist32, METH_VARARGS, "hist32(data, kind, mode, lo, norm, hi, out): add 32 bin counts into out."},
    {"diff", k_diff, METH_VARARGS, "diff(a, b, kind) -> weight-diff figures of two blocks."},
    {"equal", k_equal, METH_VARARGS, "equal(a, b) -> whether the bytes are the same."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ckernels", "Compiled statistics and diff kernels.", -1, methods};

PyMODINIT_FUNC PyInit_ckernels(void) { return PyModule_Create(&module); }
