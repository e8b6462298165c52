/* rnn_cell.c — one time step of the recurrent cells (Elman RNN, LSTM, GRU), forward and
 * backward, for float and double: everything of a step but its two GEMMs, in one pass.
 *
 * The caller has computed, for `rows` sequences of `hidden` units, xw = x W_ihᵀ + b_ih and
 * hw = h W_hhᵀ (+ b_hh), row-major with the gates side by side in PyTorch's order; s is the
 * sigmoid 1 / (1 + exp(-x)).
 *
 *   rnn   h = tanh(xw + hw) (relu: max(xw + hw, 0))   dpre = dh (1 - h²) (relu: dh [h > 0])
 *
 *   lstm  i, f, g, o = s, s, tanh, s of (xw + hw), chunks of `hidden` columns
 *         c = f c_prev + i g,   h = o tanh(c)          act = [i f g o] is kept for backward
 *         backward: dc_all = dc + dh o (1 - tanh² c)
 *           dgates = [dc_all g i(1-i), dc_all c_prev f(1-f), dc_all i (1-g²), dh tanh(c) o(1-o)]
 *           dc_prev = dc_all f
 *
 *   gru   r = s(xw_r + hw_r),  z = s(xw_z + hw_z),  n = tanh(xw_n + r hw_n)
 *         h = (1 - z) n + z h_prev                     saved = [r z n hw_n] is kept for backward
 *         backward: dn = dh (1-z) (1-n²),  dz = dh (h_prev - n) z(1-z),  dr = dn hw_n r(1-r)
 *           dxw = [dr dz dn],  dhw = [dr dz dn r],  dh_prev = dh z (the direct path only: the
 *           caller adds dhw W_hh)
 *
 * Every array is contiguous, `rows` rows of (gates or 1) * `hidden` columns. The reference
 * bodies compute each element in double with libm, one row at a time (rows over threads when
 * the step is big enough to pay for waking them); the tuned ones (tuned/rnn_cell_tuned.c)
 * vectorize the same formulas in T. This file is its own body, compiled once per element type
 * T (each_dtype.h).
 */
#ifndef T
#define MT_BODY "rnn_cell.c"
#include "each_dtype.h"

#else
#include "tuned/tuned.h"

/* the tuned bodies (tuned/rnn_cell_tuned.c), declared here: only this file calls them */
MT_DECLARE_TUNED(tuned_rnn_cell_forward, (const T *xw, const T *hw, T *h, int64_t rows,
                                          int64_t hidden, int relu))
MT_DECLARE_TUNED(tuned_rnn_cell_backward, (const T *dh, const T *h, T *dpre, int64_t rows,
                                           int64_t hidden, int relu))
MT_DECLARE_TUNED(tuned_lstm_cell_forward, (const T *xw, const T *hw, const T *c_prev, T *h,
                                           T *c, T *act, int64_t rows, int64_t hidden))
MT_DECLARE_TUNED(tuned_lstm_cell_backward, (const T *dh, const T *dc, const T *c_prev,
                                            const T *c, const T *act, T *dgates, T *dc_prev,
                                            int64_t rows, int64_t hidden))
MT_DECLARE_TUNED(tuned_gru_cell_forward, (const T *xw, const T *hw, const T *h_prev, T *h,
                                          T *saved, int64_t rows, int64_t hidden))
MT_DECLARE_TUNED(tuned_gru_cell_backward, (const T *dh, const T *h_prev, const T *saved,
                                           T *dxw, T *dhw, T *dh_prev, int64_t rows,
                                           int64_t hidden))

#ifndef MT_RNN_CELL_ONCE
#define MT_RNN_CELL_ONCE
static inline double mt_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
#define MT_CELL_ARGS_OK(rows, hidden) ((rows) >= 0 && (hidden) >= 0)
#endif

int F(mt_rnn_cell_forward)(const T *xw, const T *hw, T *h, int64_t rows, int64_t hidden,
                           int relu) {
    if (!MT_CELL_ARGS_OK(rows, hidden)) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_rnn_cell_forward, xw, hw, h, rows, hidden, relu);
    int nt = mt_threads_for(rows * hidden);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < hidden; ++j) {
            int64_t k = r * hidden + j;
            double pre = (double)xw[k] + hw[k];
            h[k] = (T)(relu ? (pre < 0 ? 0.0 : pre) : tanh(pre));
        }
    }
    return 0;
}

int F(mt_rnn_cell_backward)(const T *dh, const T *h, T *dpre, int64_t rows, int64_t hidden,
                            int relu) {
    if (!MT_CELL_ARGS_OK(rows, hidden)) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_rnn_cell_backward, dh, h, dpre, rows, hidden, relu);
    int nt = mt_threads_for(rows * hidden);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < hidden; ++j) {
            int64_t k = r * hidden + j;
            double y = h[k];
            dpre[k] = (T)(relu ? (y > 0 ? (double)dh[k] : 0.0) : dh[k] * (1.0 - y * y));
        }
    }
    return 0;
}

int F(mt_lstm_cell_forward)(const T *xw, const T *hw, const T *c_prev, T *h, T *c, T *act,
                            int64_t rows, int64_t hidden) {
    if (!MT_CELL_ARGS_OK(rows, hidden)) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_lstm_cell_forward, xw, hw, c_prev, h, c, act, rows, hidden);
    int64_t G = 4 * hidden;
    int nt = mt_threads_for(rows * G);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        const T *xr = xw + r * G, *hr = hw + r * G;
        T *ar = act + r * G;
        for (int64_t j = 0; j < hidden; ++j) {
            double i = mt_sigmoid((double)xr[j] + hr[j]);
            double f = mt_sigmoid((double)xr[hidden + j] + hr[hidden + j]);
            double g = tanh((double)xr[2 * hidden + j] + hr[2 * hidden + j]);
            double o = mt_sigmoid((double)xr[3 * hidden + j] + hr[3 * hidden + j]);
            double cn = f * c_prev[r * hidden + j] + i * g;
            c[r * hidden + j] = (T)cn;
            h[r * hidden + j] = (T)(o * tanh(cn));
            ar[j] = (T)i;
            ar[hidden + j] = (T)f;
            ar[2 * hidden + j] = (T)g;
            ar[3 * hidden + j] = (T)o;
        }
    }
    return 0;
}

int F(mt_lstm_cell_backward)(const T *dh, const T *dc, const T *c_prev, const T *c,
                             const T *act, T *dgates, T *dc_prev, int64_t rows,
                             int64_t hidden) {
    if (!MT_CELL_ARGS_OK(rows, hidden)) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_lstm_cell_backward, dh, dc, c_prev, c, act, dgates, dc_prev, rows,
                 hidden);
    int64_t G = 4 * hidden;
    int nt = mt_threads_for(rows * G);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        const T *ar = act + r * G;
        T *dr = dgates + r * G;
        for (int64_t j = 0; j < hidden; ++j) {
            int64_t k = r * hidden + j;
            double i = ar[j], f = ar[hidden + j], g = ar[2 * hidden + j], o = ar[3 * hidden + j];
            double tc = tanh((double)c[k]);
            double dc_all = (double)dc[k] + (double)dh[k] * o * (1.0 - tc * tc);
            dr[j] = (T)(dc_all * g * i * (1.0 - i));
            dr[hidden + j] = (T)(dc_all * c_prev[k] * f * (1.0 - f));
            dr[2 * hidden + j] = (T)(dc_all * i * (1.0 - g * g));
            dr[3 * hidden + j] = (T)((double)dh[k] * tc * o * (1.0 - o));
            dc_prev[k] = (T)(dc_all * f);
        }
    }
    return 0;
}

int F(mt_gru_cell_forward)(const T *xw, const T *hw, const T *h_prev, T *h, T *saved,
                           int64_t rows, int64_t hidden) {
    if (!MT_CELL_ARGS_OK(rows, hidden)) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_gru_cell_forward, xw, hw, h_prev, h, saved, rows, hidden);
    int64_t G = 3 * hidden;
    int nt = mt_threads_for(rows * G);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        const T *xr = xw + r * G, *hr = hw + r * G;
        T *sr = saved + r * 4 * hidden;
        for (int64_t j = 0; j < hidden; ++j) {
            double rg = mt_sigmoid((double)xr[j] + hr[j]);
            double z = mt_sigmoid((double)xr[hidden + j] + hr[hidden + j]);
            double hn = hr[2 * hidden + j];
            double n = tanh((double)xr[2 * hidden + j] + rg * hn);
            h[r * hidden + j] = (T)((1.0 - z) * n + z * h_prev[r * hidden + j]);
            sr[j] = (T)rg;
            sr[hidden + j] = (T)z;
            sr[2 * hidden + j] = (T)n;
            sr[3 * hidden + j] = (T)hn;
        }
    }
    return 0;
}

int F(mt_gru_cell_backward)(const T *dh, const T *h_prev, const T *saved, T *dxw, T *dhw,
                            T *dh_prev, int64_t rows, int64_t hidden) {
    if (!MT_CELL_ARGS_OK(rows, hidden)) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_gru_cell_backward, dh, h_prev, saved, dxw, dhw, dh_prev, rows,
                 hidden);
    int64_t G = 3 * hidden;
    int nt = mt_threads_for(rows * G);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        const T *sr = saved + r * 4 * hidden;
        T *dxr = dxw + r * G, *dhr = dhw + r * G;
        for (int64_t j = 0; j < hidden; ++j) {
            int64_t k = r * hidden + j;
            double rg = sr[j], z = sr[hidden + j], n = sr[2 * hidden + j], hn = sr[3 * hidden + j];
            double d = dh[k];
            double dn = d * (1.0 - z) * (1.0 - n * n);
            double dz = d * ((double)h_prev[k] - n) * z * (1.0 - z);
            double dr = dn * hn * rg * (1.0 - rg);
            dxr[j] = dhr[j] = (T)dr;
            dxr[hidden + j] = dhr[hidden + j] = (T)dz;
            dxr[2 * hidden + j] = (T)dn;
            dhr[2 * hidden + j] = (T)(dn * rg);
            dh_prev[k] = (T)(d * z);
        }
    }
    return 0;
}
#endif
