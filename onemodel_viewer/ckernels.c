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

/* Helpers on 32-byte vectors are always inlined: called out of line from an AVX2 clone, a vector return
   would cross two calling conventions (GCC's -Wpsabi note) and read garbage (seen at -O0). */
#if defined(__GNUC__)
#define INLINE static inline __attribute__((always_inline))
#else
#define INLINE static inline
#endif

/* The hot loops are built twice on x86-64 Linux (AVX2 and the baseline), picked at load time. The figures
   are the same bits either way: the lanes fix the order of every sum, FMA contraction is off
   (-ffp-contract=off) and float<->double conversions, +, -, *, / are correctly rounded on both. */
#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__) && !defined(__clang__) && !defined(OMV_NO_CLONES)
#define HOT __attribute__((target_clones("avx2", "default")))
#else
#define HOT
#endif

/* Vectors of the generic kind (GCC/clang): element-wise IEEE operations, so every lane's order is the
   source's whatever the instruction set. A lane of a LANES-wide sum holds the elements i ≡ lane (mod LANES). */
typedef float v4f __attribute__((vector_size(16)));
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef int32_t v4i __attribute__((vector_size(16)));
typedef double v4d __attribute__((vector_size(32)));
typedef int64_t v4l __attribute__((vector_size(32)));

INLINE v4f ld4f(const float *p) { v4f v; memcpy(&v, p, 16); return v; }
INLINE v4d ld4d(const double *p) { v4d v; memcpy(&v, p, 32); return v; }
INLINE v4f sel4f(v4i m, v4f a, v4f b) { return (v4f)(((v4i)a & m) | ((v4i)b & ~m)); }
INLINE v8f ld8f(const float *p) { v8f v; memcpy(&v, p, 32); return v; }
INLINE v8f sel8f(v8i m, v8f a, v8f b) { return (v8f)(((v8i)a & m) | ((v8i)b & ~m)); }
INLINE v4d sel4d(v4l m, v4d a, v4d b) { return (v4d)(((v4l)a & m) | ((v4l)b & ~m)); }
INLINE v4d abs4d(v4d a) { const v4l k = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX}; return (v4d)((v4l)a & k); }
INLINE double hsum4d(v4d a, v4d b) { /* lanes 0..7 in order */
    double t = 0;
    for (int j = 0; j < 4; j++) t += a[j];
    for (int j = 0; j < 4; j++) t += b[j];
    return t;
}
#define TILE 256 /* elements summed in LANES lanes before the lanes go into the running sums */
#define TILES 256 /* tiles added up before that sum goes into the total: three levels, error ~ eps * (32 + 256 + n / 2^16) */

/* A float64 sum in three levels (see TILE): add(x) per lane, tile_end() after each tile. */
typedef struct { double lane[LANES], mid[LANES], top[LANES]; int tiles; } Acc;

INLINE void acc_tile_end(Acc *a) {
    for (int j = 0; j < LANES; j++) { a->mid[j] += a->lane[j]; a->lane[j] = 0; }
    if (++a->tiles == TILES) {
        for (int j = 0; j < LANES; j++) { a->top[j] += a->mid[j]; a->mid[j] = 0; }
        a->tiles = 0;
    }
}

INLINE double acc_total(Acc *a) {
    double t = 0;
    for (int j = 0; j < LANES; j++) t += a->top[j] + (a->mid[j] + a->lane[j]);
    return t;
}

static inline uint16_t ld16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t ld32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t ld64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline float ldf(const unsigned char *p) { float v; memcpy(&v, p, 4); return v; }
static inline double ldd(const unsigned char *p) { double v; memcpy(&v, p, 8); return v; }

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

/* Two uint32 tables per thread for large inputs (even and odd elements: a run of one value does not wait on
   one counter), kept zeroed between calls (flushed into the caller's table at the end of each call). */
static _Thread_local uint32_t *tls_tables = NULL;

#define SMALL_COUNT (1 << 20)

/* count16(data, out[, as_float]): add the occurrences of each uint16 value of data (little endian) into out
   (65,536 int64, or float64 with as_float: exact below 2^53). */
static PyObject *k_count16(PyObject *self, PyObject *args) {
    PyObject *src, *dst;
    int as_float = 0;
    if (!PyArg_ParseTuple(args, "OO|p", &src, &dst, &as_float)) return NULL;
    Py_buffer in, out;
    if (get_buffer(src, &in, 0) < 0) return NULL;
    if (get_buffer(dst, &out, 1) < 0) { PyBuffer_Release(&in); return NULL; }
    if (out.len != 65536 * 8) {
        PyBuffer_Release(&in); PyBuffer_Release(&out);
        PyErr_SetString(PyExc_ValueError, "out must hold 65,536 int64 or float64");
        return NULL;
    }
    Py_ssize_t n = in.len / 2;
    const unsigned char *p = (const unsigned char *)in.buf;
    if (n >= SMALL_COUNT && tls_tables == NULL) {
        tls_tables = (uint32_t *)calloc(2 * 65536, sizeof(uint32_t));
        if (tls_tables == NULL) { PyBuffer_Release(&in); PyBuffer_Release(&out); return PyErr_NoMemory(); }
    }
    Py_BEGIN_ALLOW_THREADS
    if (n < SMALL_COUNT) { /* straight into the caller's table (no flush of 2 x 65,536 counters) */
        if (as_float) {
            double *acc = (double *)out.buf;
            for (Py_ssize_t i = 0; i < n; i++) acc[ld16(p + 2 * i)] += 1.0;
        } else {
            int64_t *acc = (int64_t *)out.buf;
            for (Py_ssize_t i = 0; i < n; i++) acc[ld16(p + 2 * i)]++;
        }
    } else {
        uint32_t *t0 = tls_tables, *t1 = tls_tables + 65536;
        Py_ssize_t i = 0;
        while (i < n) { /* flushed before a uint32 can wrap */
            Py_ssize_t end = n - i > ((Py_ssize_t)1 << 30) ? i + ((Py_ssize_t)1 << 30) : n;
            Py_ssize_t pairs_end = i + ((end - i) & ~(Py_ssize_t)1);
            for (; i < pairs_end; i += 2) {
                t0[ld16(p + 2 * i)]++;
                t1[ld16(p + 2 * i + 2)]++;
            }
            if (i < end) { t0[ld16(p + 2 * i)]++; i++; }
            if (as_float) {
                double *acc = (double *)out.buf;
                for (int k = 0; k < 65536; k++) { acc[k] += (double)t0[k] + (double)t1[k]; t0[k] = t1[k] = 0; }
            } else {
                int64_t *acc = (int64_t *)out.buf;
                for (int k = 0; k < 65536; k++) { acc[k] += (int64_t)t0[k] + (int64_t)t1[k]; t0[k] = t1[k] = 0; }
            }
        }
    }
    Py_END_ALLOW_THREADS
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
        Acc sd = {0}, dd = {0};                                                               \
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
        Acc s = {0};                                                                            \
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
            Acc ts = {0}; T tl = (T)INFINITY, th = (T)-INFINITY; int64_t tz = 0, nf = 0;        \
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
        Acc s = {0};                                                                            \
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

/* The fast path of float32 figures: tiles of TILE values copied to L1, each summed in 8 lanes, its mean taken
   and its squared deviations summed (two passes over L1, one over memory), the tiles merged in order with
   Chan's formula. Returns 0 when the block holds a NaN or an infinity (the caller's slow path). */
static HOT int figs_fast_f32(const unsigned char *p, Py_ssize_t n, Figs *f) {
    float buf[TILE] __attribute__((aligned(32)));
    const v8f zero = {0, 0, 0, 0, 0, 0, 0, 0};
    v8f lo = zero + INFINITY, hi = -lo;
    int64_t zeros = 0;
    double na = 0, ma = 0, m2a = 0;
    for (Py_ssize_t t = 0; t < n; t += TILE) {
        int m = n - t < TILE ? (int)(n - t) : TILE;
        memcpy(buf, p + t * 4, (size_t)m * 4);
        int full = m - m % 8;
        v8i z = {0};
        v4d s0 = {0}, s1 = {0};
        for (int i = 0; i < full; i += 8) {
            v8f v = ld8f(buf + i);
            lo = sel8f(v < lo, v, lo);
            hi = sel8f(v > hi, v, hi);
            z -= v == zero;
            s0 += __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1, 2, 3), v4d);
            s1 += __builtin_convertvector(__builtin_shufflevector(v, v, 4, 5, 6, 7), v4d);
        }
        for (int j = 0; j < 8; j++) zeros += z[j];
        double ts = hsum4d(s0, s1); /* NaN or infinite exactly when the tile holds a NaN or an infinity */
        int32_t nb = 0;
        for (int i = full; i < m; i++) {
            float v = buf[i];
            lo[0] = v < lo[0] ? v : lo[0];
            hi[0] = v > hi[0] ? v : hi[0];
            zeros += v == 0;
            nb += !(v - v == 0);
            ts += (double)v;
        }
        if (nb || !isfinite(ts)) return 0;
        double mt = ts / m;
        v4d sd0 = {0}, sd1 = {0}, dd0 = {0}, dd1 = {0};
        for (int i = 0; i < full; i += 8) {
            v8f v = ld8f(buf + i);
            v4d d0 = __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1, 2, 3), v4d) - mt;
            v4d d1 = __builtin_convertvector(__builtin_shufflevector(v, v, 4, 5, 6, 7), v4d) - mt;
            sd0 += d0; sd1 += d1; dd0 += d0 * d0; dd1 += d1 * d1;
        }
        double tsd = hsum4d(sd0, sd1), tdd = hsum4d(dd0, dd1);
        for (int i = full; i < m; i++) {
            double d = (double)buf[i] - mt;
            tsd += d;
            tdd += d * d;
        }
        double mb = mt + tsd / m, m2b = tdd - tsd * tsd / m;
        if (na == 0) { na = m; ma = mb; m2a = m2b; }
        else {
            double tot = na + m, delta = mb - ma;
            ma = ma + delta * m / tot;
            m2a = m2a + m2b + delta * delta * na * m / tot;
            na = tot;
        }
    }
    float tl = lo[0], th = hi[0];
    for (int j = 0; j < 8; j++) {
        tl = lo[j] < tl ? lo[j] : tl;
        th = hi[j] > th ? hi[j] : th;
    }
    f->n = n; f->zeros = zeros; f->flo = tl; f->fhi = th; f->any = 1;
    f->s = ma * na;
    if (!isfinite(f->s) || !isfinite(ma)) { f->s = NAN; f->m2 = INFINITY; }
    else f->m2 = isfinite(m2a) ? (m2a > 0 ? m2a : 0.0) : INFINITY;
    return 1;
}

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
    case K_F32: if (!figs_fast_f32(p, n, f)) FLOAT_FIGS(float, ldf, (double)FLT_MAX); break;
    case K_F64: FLOAT_FIGS(double, ldd, DBL_MAX); break; /* the scalar lanes: float64 tensors are rare in models */
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
            c[i & 3][idx < 34 ? idx : 33]++;                                                      \
        }                                                                                         \
    } while (0)

/* float32 data binned in float32 (mode 0): tiles whose values are all finite are binned four at a time
   (the same float32 operations), the bins counted in four tables (no wait on one counter). */
static HOT void hist_f32(const unsigned char *p, Py_ssize_t n, float lo32, float norm32, int64_t c[4][40]) {
    float buf[TILE] __attribute__((aligned(32)));
    int32_t idx[TILE] __attribute__((aligned(32)));
    const v4f zero = {0, 0, 0, 0};
    for (Py_ssize_t t = 0; t < n; t += TILE) {
        int m = n - t < TILE ? (int)(n - t) : TILE;
        memcpy(buf, p + t * 4, (size_t)m * 4);
        if (m == TILE) {
            v4i bad = {0};
            for (int i = 0; i < TILE; i += 4) {
                v4f v = ld4f(buf + i);
                bad -= (v - v) != zero;
                v4f x = (v - lo32) * norm32;
                v4i k = __builtin_convertvector(x, v4i);
                memcpy(idx + i, &k, 16);
            }
            if ((bad[0] | bad[1] | bad[2] | bad[3]) == 0) {
                for (int i = 0; i < TILE; i += 4) {
                    c[0][(uint32_t)idx[i] < 34 ? idx[i] : 33]++;
                    c[1][(uint32_t)idx[i + 1] < 34 ? idx[i + 1] : 33]++;
                    c[2][(uint32_t)idx[i + 2] < 34 ? idx[i + 2] : 33]++;
                    c[3][(uint32_t)idx[i + 3] < 34 ? idx[i + 3] : 33]++;
                }
                continue;
            }
        }
        for (int i = 0; i < m; i++) {
            float v = buf[i];
            if (!isfinite(v)) continue;
            unsigned k = (unsigned)(unsigned char)((v - lo32) * norm32);
            c[i & 3][k < 34 ? k : 33]++;
        }
    }
}

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
    int64_t c[4][40];
    memset(c, 0, sizeof c);
    if (mode == 0) {
        hist_f32(p, n, (float)lo, (float)norm, c);
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
    for (int k = 0; k < 33; k++) c[0][k] += c[1][k] + c[2][k] + c[3][k];
    for (int k = 0; k < 31; k++) acc[k] += c[0][k];
    acc[31] += c[0][31] + c[0][32];
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

/* The tile loop of the float diff: bit patterns compared and checked for NaN/Inf in integers, the tile
   widened to double (exactly) when every pair is finite, then summed in LANES lanes per tile; a tile holding a
   non-finite pair goes through the scalar loop. Sums in three levels (Acc). */
/* One vector of 4 pairs into lanes-vector H (0: lanes 0-3, 1: lanes 4-7). */
#define DIFF_STEP(H, I)                                                                           \
    do {                                                                                          \
        v4d a = ld4d(da + (I)), b = ld4d(db + (I)), d = b - a;                                    \
        v4d ad = abs4d(d), xa = abs4d(a), xb = abs4d(b), mg = sel4d(xa > xb, xa, xb);             \
        vaa##H += a * a; vbb##H += b * b; vab##H += a * b; vdd##H += d * d; vsa##H += ad;         \
        vmx##H = sel4d(ad > vmx##H, ad, vmx##H);                                                  \
        v4d rel = ad / mg; /* 0/0: NaN, never greater */                                          \
        vmr##H = sel4d(rel > vmr##H, rel, vmr##H);                                                \
        ra##H -= mg > zd;                                                                         \
    } while (0)

#define FAST_DIFF(NAME, BITS_T, MASK, WIDEN)                                                      \
static HOT void NAME(const unsigned char *pa, const unsigned char *pb, Py_ssize_t n, Diff *r) {   \
    BITS_T ua[TILE], ub[TILE];                                                                    \
    double da[TILE], db[TILE];                                                                    \
    Acc aa = {0}, bb = {0}, ab = {0}, dd = {0}, sa = {0};                               \
    double mx[LANES] = {0}, mr[LANES] = {0};                                                      \
    v4d vmx0 = {0}, vmx1 = {0}, vmr0 = {0}, vmr1 = {0};                                           \
    int64_t rel_any = 0, fin = 0;                                                                 \
    for (Py_ssize_t t = 0; t < n; t += TILE) {                                                    \
        int m = n - t < TILE ? (int)(n - t) : TILE;                                               \
        memcpy(ua, pa + t * (Py_ssize_t)sizeof(BITS_T), (size_t)m * sizeof(BITS_T));              \
        memcpy(ub, pb + t * (Py_ssize_t)sizeof(BITS_T), (size_t)m * sizeof(BITS_T));              \
        int32_t ne = 0, bad = 0;                                                                  \
        v4d vaa0 = {0}, vaa1 = {0}, vbb0 = {0}, vbb1 = {0}, vab0 = {0}, vab1 = {0};               \
        v4d vdd0 = {0}, vdd1 = {0}, vsa0 = {0}, vsa1 = {0};                                       \
        for (int i = 0; i < m; i++) {                                                             \
            ne += ua[i] != ub[i];                                                                 \
            bad += ((ua[i] & MASK) == MASK) | ((ub[i] & MASK) == MASK);                           \
        }                                                                                         \
        if (ne && r->first < 0)                                                                   \
            for (int i = 0; i < m; i++)                                                           \
                if (ua[i] != ub[i]) { r->first = t + i; break; }                                  \
        r->differing += ne;                                                                       \
        WIDEN(ua, da, m);                                                                         \
        WIDEN(ub, db, m);                                                                         \
        if (!bad && m == TILE) {                                                                  \
            v4l ra0 = {0}, ra1 = {0};                                                             \
            const v4d zd = {0, 0, 0, 0};                                                          \
            for (int i = 0; i < TILE; i += 8) {                                                   \
                DIFF_STEP(0, i); DIFF_STEP(1, i + 4);                                             \
            }                                                                                     \
            for (int j = 0; j < 4; j++) rel_any -= ra0[j] + ra1[j];                               \
            fin += TILE;                                                                          \
        } else {                                                                                  \
            for (int i = 0; i < m; i++) {                                                         \
                if ((ua[i] & MASK) == MASK || (ub[i] & MASK) == MASK) { r->nonfinite++; continue; } \
                double a = da[i], b = db[i], d = b - a;                                           \
                double ad = fabs(d), xa = fabs(a), xb = fabs(b), mg = xa > xb ? xa : xb;          \
                aa.lane[0] += a * a; bb.lane[0] += b * b; ab.lane[0] += a * b;                    \
                dd.lane[0] += d * d; sa.lane[0] += ad;                                            \
                mx[0] = ad > mx[0] ? ad : mx[0];                                                  \
                if (mg > 0) { double rel = ad / mg; mr[0] = rel > mr[0] ? rel : mr[0]; rel_any++; } \
                fin++;                                                                            \
            }                                                                                     \
        }                                                                                         \
        for (int j = 0; j < 4; j++) {                                                             \
            aa.lane[j] += vaa0[j]; aa.lane[j + 4] += vaa1[j]; bb.lane[j] += vbb0[j]; bb.lane[j + 4] += vbb1[j]; \
            ab.lane[j] += vab0[j]; ab.lane[j + 4] += vab1[j]; dd.lane[j] += vdd0[j]; dd.lane[j + 4] += vdd1[j]; \
            sa.lane[j] += vsa0[j]; sa.lane[j + 4] += vsa1[j];                                     \
        }                                                                                         \
        acc_tile_end(&aa); acc_tile_end(&bb); acc_tile_end(&ab); acc_tile_end(&dd); acc_tile_end(&sa); \
    }                                                                                             \
    r->aa = acc_total(&aa); r->bb = acc_total(&bb); r->ab = acc_total(&ab);                       \
    r->dd = acc_total(&dd); r->sabs = acc_total(&sa); r->finite = fin;                            \
    for (int j = 0; j < 4; j++) {                                                                 \
        mx[j] = vmx0[j] > mx[j] ? vmx0[j] : mx[j]; mx[j + 4] = vmx1[j] > mx[j + 4] ? vmx1[j] : mx[j + 4]; \
        mr[j] = vmr0[j] > mr[j] ? vmr0[j] : mr[j]; mr[j + 4] = vmr1[j] > mr[j + 4] ? vmr1[j] : mr[j + 4]; \
    }                                                                                             \
    for (int j = 0; j < LANES; j++) {                                                             \
        r->max_abs = mx[j] > r->max_abs ? mx[j] : r->max_abs;                                     \
        r->max_rel = mr[j] > r->max_rel ? mr[j] : r->max_rel;                                     \
    }                                                                                             \
    if (!rel_any) r->max_rel = NAN;                                                               \
}

/* Widen a tile to double. float16: exponent and mantissa moved up and rescaled by 2^112 (exact, subnormals
   too), the sign put back; NaN/Inf come out as large finite numbers, which the caller skips. */
INLINE void widen_f16(const uint16_t *u, double *d, int m) {
    for (int i = 0; i < m; i++) {
        uint32_t w = (uint32_t)(u[i] & 0x7fffu) << 13;
        float f;
        memcpy(&f, &w, 4);
        f *= 5.192296858534828e+33f;
        d[i] = (u[i] & 0x8000u) ? -(double)f : (double)f;
    }
}
INLINE void widen_bf16(const uint16_t *u, double *d, int m) {
    for (int i = 0; i < m; i++) {
        uint32_t w = (uint32_t)u[i] << 16;
        float f;
        memcpy(&f, &w, 4);
        d[i] = (double)f;
    }
}
INLINE void widen_f32(const uint32_t *u, double *d, int m) {
    for (int i = 0; i < m; i++) {
        float f;
        memcpy(&f, &u[i], 4);
        d[i] = (double)f;
    }
}
INLINE void widen_f64(const uint64_t *u, double *d, int m) { memcpy(d, u, (size_t)m * 8); }

FAST_DIFF(diff_f16, uint16_t, 0x7c00u, widen_f16)
FAST_DIFF(diff_bf16, uint16_t, 0x7f80u, widen_bf16)
FAST_DIFF(diff_f32, uint32_t, 0x7f800000u, widen_f32)
FAST_DIFF(diff_f64, uint64_t, 0x7ff0000000000000ull, widen_f64)

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


static void diff(const unsigned char *pa, const unsigned char *pb, Py_ssize_t n, int kind, Diff *r) {
    memset(r, 0, sizeof *r);
    r->first = -1;
    switch (kind) {
    case K_F16: diff_f16(pa, pb, n, r); break;
    case K_BF16: diff_bf16(pa, pb, n, r); break;
    case K_F32: diff_f32(pa, pb, n, r); break;
    case K_F64: diff_f64(pa, pb, n, r); break;
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

/* ------------------------------------------------------------------ topo */

/* topo(indptr, producers, out) -> emitted: the stable dependency order (Kahn's algorithm taking the smallest
   ready index first, as format/rules.py's heap does) of n nodes whose producers of node i are
   producers[indptr[i]:indptr[i + 1]] (int64, duplicates allowed); the order goes to out (n int64), and the
   count emitted is returned (less than n: a cycle; the rest are left out). */
static void heap_push(int64_t *h, Py_ssize_t *len, int64_t v) {
    Py_ssize_t i = (*len)++;
    while (i > 0) {
        Py_ssize_t up = (i - 1) / 2;
        if (h[up] <= v) break;
        h[i] = h[up];
        i = up;
    }
    h[i] = v;
}

static int64_t heap_pop(int64_t *h, Py_ssize_t *len) {
    int64_t top = h[0], v = h[--(*len)];
    Py_ssize_t i = 0, n = *len;
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && h[c + 1] < h[c]) c++;
        if (h[c] >= v) break;
        h[i] = h[c];
        i = c;
    }
    if (n > 0) h[i] = v;
    return top;
}

static PyObject *k_topo(PyObject *self, PyObject *args) {
    PyObject *o_ptr, *o_prod, *o_out;
    if (!PyArg_ParseTuple(args, "OOO", &o_ptr, &o_prod, &o_out)) return NULL;
    Py_buffer bp, bq, bo;
    if (get_buffer(o_ptr, &bp, 0) < 0) return NULL;
    if (get_buffer(o_prod, &bq, 0) < 0) { PyBuffer_Release(&bp); return NULL; }
    if (get_buffer(o_out, &bo, 1) < 0) { PyBuffer_Release(&bp); PyBuffer_Release(&bq); return NULL; }
    Py_ssize_t n = bo.len / 8, m = bq.len / 8;
    const int64_t *ptr = (const int64_t *)bp.buf, *prod = (const int64_t *)bq.buf;
    int64_t *out = (int64_t *)bo.buf;
    int ok = bp.len == (n + 1) * 8 && ptr[0] == 0 && ptr[n] == m;
    for (Py_ssize_t i = 0; ok && i < n; i++) ok = ptr[i] <= ptr[i + 1];
    for (Py_ssize_t k = 0; ok && k < m; k++) ok = prod[k] >= 0 && prod[k] < n;
    if (!ok) {
        PyBuffer_Release(&bp); PyBuffer_Release(&bq); PyBuffer_Release(&bo);
        PyErr_SetString(PyExc_ValueError, "inconsistent dependency arrays");
        return NULL;
    }
    int64_t *indeg = malloc((size_t)(n + 1) * 8), *cptr = calloc((size_t)n + 1, 8), *cons = malloc((size_t)(m + 1) * 8);
    int64_t *heap = malloc((size_t)(n + 1) * 8);
    if (!indeg || !cptr || !cons || !heap) {
        free(indeg); free(cptr); free(cons); free(heap);
        PyBuffer_Release(&bp); PyBuffer_Release(&bq); PyBuffer_Release(&bo);
        return PyErr_NoMemory();
    }
    Py_ssize_t emitted = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < m; k++) cptr[prod[k] + 1]++;
    for (Py_ssize_t i = 0; i < n; i++) cptr[i + 1] += cptr[i];
    for (Py_ssize_t i = 0; i < n; i++) {
        indeg[i] = ptr[i + 1] - ptr[i];
        for (int64_t k = ptr[i]; k < ptr[i + 1]; k++) cons[cptr[prod[k]]++] = i; /* consumers in node order */
    }
    for (Py_ssize_t i = n; i > 0; i--) cptr[i] = cptr[i - 1]; /* back to starts */
    cptr[0] = 0;
    Py_ssize_t len = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (indeg[i] == 0) heap[len++] = i; /* ascending: already a heap */
    while (len > 0) {
        int64_t i = heap_pop(heap, &len);
        out[emitted++] = i;
        for (int64_t k = cptr[i]; k < cptr[i + 1]; k++)
            if (--indeg[cons[k]] == 0) heap_push(heap, &len, cons[k]);
    }
    Py_END_ALLOW_THREADS
    free(indeg); free(cptr); free(cons); free(heap);
    PyBuffer_Release(&bp); PyBuffer_Release(&bq); PyBuffer_Release(&bo);
    return PyLong_FromSsize_t(emitted);
}

static PyMethodDef methods[] = {
    {"topo", k_topo, METH_VARARGS, "topo(indptr, producers, out) -> emitted: the stable dependency order."},
    {"count16", k_count16, METH_VARARGS, "count16(data, out[, as_float]): add uint16 value counts into out (65,536 int64 or float64)."},
    {"figures", k_figures, METH_VARARGS, "figures(data, kind) -> pass-1 statistics of one block."},
    {"hist32", k_hist32, METH_VARARGS, "hist32(data, kind, mode, lo, norm, hi, out): add 32 bin counts into out."},
    {"diff", k_diff, METH_VARARGS, "diff(a, b, kind) -> weight-diff figures of two blocks."},
    {"equal", k_equal, METH_VARARGS, "equal(a, b) -> whether the bytes are the same."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ckernels", "Compiled statistics and diff kernels.", -1, methods};

PyMODINIT_FUNC PyInit_ckernels(void) { return PyModule_Create(&module); }
