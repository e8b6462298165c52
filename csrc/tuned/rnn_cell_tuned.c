/* tuned/rnn_cell_tuned.c — the recurrent cells' step of csrc/rnn_cell.c, vectorized.
 *
 * It exists because the reference bodies call libm's exp and tanh once per gate, in double:
 * an LSTM step of 32 x 256 units took 1.7 ms there, 2.5 times the step's GEMM h W_hhᵀ, so the
 * cell, not the GEMM, set the layer's speed. Here the same formulas are written in T with
 * fast_exp.h's exp, in `omp simd` loops over each row's units, so GCC vectorizes them at every
 * ISA level.
 *   sigmoid(x) = 1 / (1 + exp(-x))         (exp(-x) = inf below the overflow point: 0)
 *   tanh(x) = sign(x) (1 - e) / (1 + e), e = exp(-2|x|) in (0, 1]: no overflow; its absolute
 *            error is a few ulp of 1 near 0 (the relative error of 1 - e), as tanh = 2σ(2x) - 1
 * Compiled once per ISA level and element type (each_isa.h); this file is its own body.
 */
#ifndef ISA
#include <math.h>
#include "mt_internal.h"
#include "fast_exp.h"
#define MT_BODY "tuned/rnn_cell_tuned.c"
#include "each_isa.h"
#else

#define EXP_T MT_CAT(mt_exp, SFX)
MT_INLINE static T V(cell_exp)(T x) {
    const T overflow = sizeof(T) == sizeof(float) ? (T)88.7228394 : (T)709.782712893384;
    const T e = EXP_T(x);
    return x > overflow ? (T)INFINITY : e;
}

MT_INLINE static T V(cell_sigmoid)(T x) { return (T)1 / ((T)1 + V(cell_exp)(-x)); }

MT_INLINE static T V(cell_tanh)(T x) {
    const T a = x < 0 ? -x : x;
    const T e = V(cell_exp)((T)-2 * a);
    const T t = ((T)1 - e) / ((T)1 + e);
    return x < 0 ? -t : t;
}

int V(tuned_rnn_cell_forward)(const T *xw, const T *hw, T *h, int64_t rows, int64_t hidden,
                              int relu) {
    int64_t n = rows * hidden;
    int nt = mt_threads_for(n);
    if (relu) {
#pragma omp parallel for simd schedule(static) num_threads(nt)
        for (int64_t k = 0; k < n; ++k) {
            T pre = xw[k] + hw[k];
            h[k] = pre < 0 ? (T)0 : pre;
        }
    } else {
#pragma omp parallel for simd schedule(static) num_threads(nt)
        for (int64_t k = 0; k < n; ++k) h[k] = V(cell_tanh)(xw[k] + hw[k]);
    }
    return 0;
}

int V(tuned_rnn_cell_backward)(const T *dh, const T *h, T *dpre, int64_t rows, int64_t hidden,
                               int relu) {
    int64_t n = rows * hidden;
    int nt = mt_threads_for(n);
#pragma omp parallel for simd schedule(static) num_threads(nt)
    for (int64_t k = 0; k < n; ++k)
        dpre[k] = relu ? (h[k] > 0 ? dh[k] : (T)0) : dh[k] * ((T)1 - h[k] * h[k]);
    return 0;
}

int V(tuned_lstm_cell_forward)(const T *xw, const T *hw, const T *c_prev, T *h, T *c, T *act,
                               int64_t rows, int64_t hidden) {
    int64_t G = 4 * hidden;
    int nt = mt_threads_for(rows * G);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        const T *xr = xw + r * G, *hr = hw + r * G, *cp = c_prev + r * hidden;
        T *ar = act + r * G, *hn = h + r * hidden, *cn = c + r * hidden;
#pragma omp simd
        for (int64_t j = 0; j < hidden; ++j) {
            T i = V(cell_sigmoid)(xr[j] + hr[j]);
            T f = V(cell_sigmoid)(xr[hidden + j] + hr[hidden + j]);
            T g = V(cell_tanh)(xr[2 * hidden + j] + hr[2 * hidden + j]);
            T o = V(cell_sigmoid)(xr[3 * hidden + j] + hr[3 * hidden + j]);
            T cj = f * cp[j] + i * g;
            cn[j] = cj;
            hn[j] = o * V(cell_tanh)(cj);
            ar[j] = i;
            ar[hidden + j] = f;
            ar[2 * hidden + j] = g;
            ar[3 * hidden + j] = o;
        }
    }
    return 0;
}

int V(tuned_lstm_cell_backward)(const T *dh, const T *dc, const T *c_prev, const T *c,
                                const T *act, T *dgates, T *dc_prev, int64_t rows,
                                int64_t hidden) {
    int64_t G = 4 * hidden;
    int nt = mt_threads_for(rows * G);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        const T *ar = act + r * G;
        T *dr = dgates + r * G;
        int64_t base = r * hidden;
#pragma omp simd
        for (int64_t j = 0; j < hidden; ++j) {
            T i = ar[j], f = ar[hidden + j], g = ar[2 * hidden + j], o = ar[3 * hidden + j];
            T tc = V(cell_tanh)(c[base + j]);
            T d = dh[base + j];
            T dc_all = dc[base + j] + d * o * ((T)1 - tc * tc);
            dr[j] = dc_all * g * i * ((T)1 - i);
            dr[hidden + j] = dc_all * c_prev[base + j] * f * ((T)1 - f);
            dr[2 * hidden + j] = dc_all * i * ((T)1 - g * g);
            dr[3 * hidden + j] = d * tc * o * ((T)1 - o);
            dc_prev[base + j] = dc_all * f;
        }
    }
    return 0;
}

int V(tuned_gru_cell_forward)(const T *xw, const T *hw, const T *h_prev, T *h, T *saved,
                              int64_t rows, int64_t hidden) {
    int64_t G = 3 * hidden;
    int nt = mt_threads_for(rows * G);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        const T *xr = xw + r * G, *hr = hw + r * G, *hp = h_prev + r * hidden;
        T *sr = saved + r * 4 * hidden, *hn_out = h + r * hidden;
#pragma omp simd
        for (int64_t j = 0; j < hidden; ++j) {
            T rg = V(cell_sigmoid)(xr[j] + hr[j]);
            T z = V(cell_sigmoid)(xr[hidden + j] + hr[hidden + j]);
            T hn = hr[2 * hidden + j];
            T n = V(cell_tanh)(xr[2 * hidden + j] + rg * hn);
            hn_out[j] = ((T)1 - z) * n + z * hp[j];
            sr[j] = rg;
            sr[hidden + j] = z;
            sr[2 * hidden + j] = n;
            sr[3 * hidden + j] = hn;
        }
    }
    return 0;
}

int V(tuned_gru_cell_backward)(const T *dh, const T *h_prev, const T *saved, T *dxw, T *dhw,
                               T *dh_prev, int64_t rows, int64_t hidden) {
    int64_t G = 3 * hidden;
    int nt = mt_threads_for(rows * G);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        const T *sr = saved + r * 4 * hidden;
        T *dxr = dxw + r * G, *dhr = dhw + r * G;
        int64_t base = r * hidden;
#pragma omp simd
        for (int64_t j = 0; j < hidden; ++j) {
            T rg = sr[j], z = sr[hidden + j], n = sr[2 * hidden + j], hn = sr[3 * hidden + j];
            T d = dh[base + j];
            T dn = d * ((T)1 - z) * ((T)1 - n * n);
            T dz = d * (h_prev[base + j] - n) * z * ((T)1 - z);
            T dr = dn * hn * rg * ((T)1 - rg);
            dxr[j] = dr;
            dhr[j] = dr;
            dxr[hidden + j] = dz;
            dhr[hidden + j] = dz;
            dxr[2 * hidden + j] = dn;
            dhr[2 * hidden + j] = dn * rg;
            dh_prev[base + j] = d * z;
        }
    }
    return 0;
}
#endif
