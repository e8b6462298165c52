/* minitorch.h — the one C API of minitorch's kernels.
 *
 * Everything here is a pure function on pointers, sizes and strides: no Python objects, no
 * allocation of outputs (scratch buffers may be malloc'ed and freed inside a call), no global
 * state except the thread count and the ISA level (runtime.c). Sizes and strides are int64_t
 * and counted in elements. Arrays are row-major. f32 and f64 variants share one body.
 *
 * Each entry point checks its arguments, then runs the plain reference body in its own file
 * (ISA level MT_ISA_REFERENCE) or the tuned one in csrc/tuned/ (every other level).
 *
 * csrc/build.py feeds the text between the BEGIN/END CDEF markers to cffi's cdef, so that part
 * must stay plain prototypes (no macros, no includes).
 *
 * Return codes: 0 = success, MT_ERR_NOMEM (-1) = a scratch allocation failed,
 * MT_ERR_ARGS (-2) = an argument the Python layer should have rejected (defence in depth),
 * MT_ERR_THREADS (-3) = the threads asked for could not be started (mt_set_num_threads).
 */
#ifndef MINITORCH_H
#define MINITORCH_H

#include <stdint.h>

#define MT_ERR_NOMEM (-1)
#define MT_ERR_ARGS (-2)
#define MT_ERR_THREADS (-3)

/* ISA levels: which body every kernel runs (mt_set_isa). */
#define MT_ISA_REFERENCE 0 /* the plain loops of csrc/<kernel>.c */
#define MT_ISA_PORTABLE 1  /* the tuned code of csrc/tuned/, no SIMD intrinsics */
#define MT_ISA_AVX2 2      /* tuned, AVX2 + FMA (x86-64-v3) */
#define MT_ISA_AVX512 3    /* tuned, AVX-512 (x86-64-v4) */

#ifdef __cplusplus
extern "C" {
#endif

/* BEGIN CDEF */
/* ---- threads and ISA level (runtime.c) ---- */
/* mt_set_num_threads returns 0, MT_ERR_ARGS for n outside [1, mt_max_threads()], or
 * MT_ERR_THREADS if n threads could not be started (the count then stays as it was). */
int mt_set_num_threads(int n);
int mt_get_num_threads(void);
int mt_max_threads(void);
int mt_has_openmp(void);
/* mt_set_isa caps the level (above what the CPU has means the best it has; default: best);
 * mt_get_isa is the level in force, mt_best_isa the best the CPU supports. */
void mt_set_isa(int level);
int mt_get_isa(void);
int mt_best_isa(void);

/* ---- memory asked for ahead (ask_ahead.c) ----
 * The next mt_gemm / mt_gemm_bias call that runs on one thread spreads prefetches of the n
 * ranges [starts[i], starts[i] + bytes[i]) between its tiles (a captured step's next kernels'
 * operands); any GEMM call forgets them when it returns. With more than one thread set, the
 * ranges are forgotten at once. Prefetches change no value. 0 <= n <= 32. */
int mt_ask_ahead(const void *const *starts, const int64_t *bytes, int64_t n);

/* ---- strided-batched GEMM (gemm.c) ----
 * For b in [0, batch):  C_b = alpha * op(A_b) * op(B_b) + beta * C_b
 * op(A_b) is m x k: A_b[i*lda + p] if !trans_a, else A_b[p*lda + i]; A_b = a + b*stride_a.
 * op(B_b) is k x n: B_b[p*ldb + j] if !trans_b, else B_b[j*ldb + p]; B_b = b + b*stride_b.
 * C_b[i*ldc + j], C_b = c + b*stride_c. A batch stride of 0 broadcasts that operand.
 * beta == 0 means C is not read (it may hold garbage or NaN). */
int mt_gemm_f32(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float *a, int64_t lda, int64_t stride_a,
                const float *b, int64_t ldb, int64_t stride_b,
                float beta, float *c, int64_t ldc, int64_t stride_c, int64_t batch);
int mt_gemm_f64(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                const double *a, int64_t lda, int64_t stride_a,
                const double *b, int64_t ldb, int64_t stride_b,
                double beta, double *c, int64_t ldc, int64_t stride_c, int64_t batch);
/* C = op(A) op(B) + bias, bias[j] added to every row's C[i*ldc + j], then C = max(C, 0) if
 * relu (z < 0 ? 0 : z: NaN stays NaN): a Linear layer's forward in one call, the values of
 * mt_gemm (alpha 1, beta 0) then the bias add then the ReLU. k may be 0 (C = bias rows). */
int mt_gemm_bias_f32(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                     const float *a, int64_t lda, const float *b, int64_t ldb,
                     const float *bias, int relu, float *c, int64_t ldc);
int mt_gemm_bias_f64(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                     const double *a, int64_t lda, const double *b, int64_t ldb,
                     const double *bias, int relu, double *c, int64_t ldc);

/* ---- a Linear layer's parameter gradients (gemm.c) ----
 * dW = dYᵀ X (out x in, rows ldw apart) and db[j] = sum over i of dY[i*ldy + j] (out values),
 * for dY rows x out and X rows x in (rows ldy and ldx apart): both from one pass over dY (the
 * tuned body sums dY's columns while it packs them for the GEMM), the values of mt_gemm
 * (trans_a, alpha 1, beta 0) and of mt_sum_cols, bit for bit. rows may be 0 (zeros). */
int mt_linear_param_grads_f32(const float *dy, int64_t ldy, const float *x, int64_t ldx,
                              int64_t rows, int64_t out, int64_t in, float *dw, int64_t ldw,
                              float *db);
int mt_linear_param_grads_f64(const double *dy, int64_t ldy, const double *x, int64_t ldx,
                              int64_t rows, int64_t out, int64_t in, double *dw, int64_t ldw,
                              double *db);

/* ---- softmax over the last dim (softmax.c) ----
 * x, y: rows x cols contiguous. z = x*scale (+ mask_add) ; entries where mask_bool != 0, or
 * (causal_lq > 0) with column j > (row % causal_lq), are excluded. A row with nothing left
 * (or all -inf) becomes zeros. At most one of mask_add / mask_bool is non-NULL. The mask is
 * addressed by strides: the row index is unravelled over row_shape[0..mask_ndim) and
 * dotted with mask_row_strides; mask_col_stride is 0 (broadcast) or 1. */
int mt_softmax_forward_f32(const float *x, float *y, int64_t rows, int64_t cols, float scale,
                           const float *mask_add, const uint8_t *mask_bool, int64_t mask_ndim,
                           const int64_t *row_shape, const int64_t *mask_row_strides,
                           int64_t mask_col_stride, int64_t causal_lq);
int mt_softmax_forward_f64(const double *x, double *y, int64_t rows, int64_t cols, double scale,
                           const double *mask_add, const uint8_t *mask_bool, int64_t mask_ndim,
                           const int64_t *row_shape, const int64_t *mask_row_strides,
                           int64_t mask_col_stride, int64_t causal_lq);
/* dx = scale * y * (dy - sum(dy*y)) */
int mt_softmax_backward_f32(const float *y, const float *dy, float *dx, int64_t rows,
                            int64_t cols, float scale);
int mt_softmax_backward_f64(const double *y, const double *dy, double *dx, int64_t rows,
                            int64_t cols, double scale);
/* y = x - logsumexp(x) (y must not overlap x) ; dx = dy - exp(y) * sum(dy) */
int mt_log_softmax_forward_f32(const float *x, float *y, int64_t rows, int64_t cols);
int mt_log_softmax_forward_f64(const double *x, double *y, int64_t rows, int64_t cols);
int mt_log_softmax_backward_f32(const float *y, const float *dy, float *dx, int64_t rows,
                                int64_t cols);
int mt_log_softmax_backward_f64(const double *y, const double *dy, double *dx, int64_t rows,
                                int64_t cols);

/* ---- cross-entropy with integer targets (cross_entropy.c) ----
 * Forward writes per-row losses (0 for ignored rows) and lse, 2 doubles per row: the row's max
 * m and log sum exp(x - m) (their sum would lose the log where |m| >> 1; double for both
 * dtypes: the backward needs exp(x - lse) exact for |x| ~ 1e4). Returns MT_ERR_ARGS, having
 * written nothing, if a target is outside [0, cols) and not ignore_index.
 * Backward: dlogits[i] = grad[i*grad_stride] * grad_scale *
 *           (softmax(x_i) - (1-eps)*onehot(t_i) - eps/cols), 0 for ignored rows. */
int mt_cross_entropy_forward_f32(const float *logits, const int64_t *target, int64_t rows,
                                 int64_t cols, int64_t ignore_index, double label_smoothing,
                                 float *loss, double *lse);
int mt_cross_entropy_forward_f64(const double *logits, const int64_t *target, int64_t rows,
                                 int64_t cols, int64_t ignore_index, double label_smoothing,
                                 double *loss, double *lse);
int mt_cross_entropy_backward_f32(const float *logits, const int64_t *target, const double *lse,
                                  const float *grad, int64_t grad_stride, double grad_scale,
                                  int64_t rows, int64_t cols, int64_t ignore_index,
                                  double label_smoothing, float *dlogits);
int mt_cross_entropy_backward_f64(const double *logits, const int64_t *target,
                                  const double *lse, const double *grad, int64_t grad_stride,
                                  double grad_scale, int64_t rows, int64_t cols,
                                  int64_t ignore_index, double label_smoothing,
                                  double *dlogits);

/* ---- layer norm over the last dim (layer_norm.c) ----
 * weight / bias may be NULL. Statistics are accumulated in double.
 * Backward: dweight / dbias may be NULL (skipped); both need weight != NULL to be meaningful. */
int mt_layer_norm_forward_f32(const float *x, const float *weight, const float *bias, float *y,
                              float *mean, float *rstd, int64_t rows, int64_t cols, double eps);
int mt_layer_norm_forward_f64(const double *x, const double *weight, const double *bias,
                              double *y, double *mean, double *rstd, int64_t rows, int64_t cols,
                              double eps);
int mt_layer_norm_backward_f32(const float *dy, const float *x, const float *weight,
                               const float *mean, const float *rstd, float *dx, float *dweight,
                               float *dbias, int64_t rows, int64_t cols);
int mt_layer_norm_backward_f64(const double *dy, const double *x, const double *weight,
                               const double *mean, const double *rstd, double *dx,
                               double *dweight, double *dbias, int64_t rows, int64_t cols);
/* ---- RMS norm over the last dim (rms_norm.c) ----
 * y = x * rstd * weight, rstd = 1 / sqrt(mean(x^2) + eps); weight may be NULL. Backward:
 * dweight may be NULL (skipped). Sums in double. */
int mt_rms_norm_forward_f32(const float *x, const float *weight, float *y, float *rstd,
                            int64_t rows, int64_t cols, double eps);
int mt_rms_norm_forward_f64(const double *x, const double *weight, double *y, double *rstd,
                            int64_t rows, int64_t cols, double eps);
int mt_rms_norm_backward_f32(const float *dy, const float *x, const float *weight,
                             const float *rstd, float *dx, float *dweight, int64_t rows,
                             int64_t cols);
int mt_rms_norm_backward_f64(const double *dy, const double *x, const double *weight,
                             const double *rstd, double *dx, double *dweight, int64_t rows,
                             int64_t cols);

/* ---- elementwise activations and clamp (pointwise.c) ----
 * n contiguous elements; an output may be its own input (in place). relu: y = max(x, 0),
 * dx = dy where y > 0 else 0. sigmoid: y = 1 / (1 + exp(-x)), dx = dy y (1 - y) (from y).
 * silu: y = x sigmoid(x), dx from x. gelu: y = x P(x), P the normal CDF (approximate 0), or
 * its tanh form (approximate 1); dx from x. clamp: y = min(max(x, min), max) with the bounds
 * rounded to the element type (+-inf for none; NaN bounds are MT_ERR_ARGS), dx = dy where
 * min <= x <= max else 0. sqrt: y = sqrt(x). rsqrt: y = 1 / sqrt(x). erf: y = erf(x). exp: y =
 * e^x. log: y = ln x. softplus: y = x where z = beta x > threshold, else log(1 + e^z) / beta (z
 * rounded to the element type first). pow_int: y = x^exponent, exponent in [-64, 64] (else
 * MT_ERR_ARGS). pow_scalar: y = x^exponent, the exponent rounded to the element type (C's pow
 * rules: NaN for x < 0 and a non-integer exponent). abs_forward: y = |x|. abs_backward: dx = dy *
 * sign(x), 0 where x is 0 or NaN. NaN inputs give NaN outputs. */
int mt_relu_forward_f32(const float *x, float *y, int64_t n);
int mt_relu_forward_f64(const double *x, double *y, int64_t n);
int mt_relu_backward_f32(const float *dy, const float *y, float *dx, int64_t n);
int mt_relu_backward_f64(const double *dy, const double *y, double *dx, int64_t n);
int mt_sigmoid_forward_f32(const float *x, float *y, int64_t n);
int mt_sigmoid_forward_f64(const double *x, double *y, int64_t n);
int mt_sigmoid_backward_f32(const float *dy, const float *y, float *dx, int64_t n);
int mt_sigmoid_backward_f64(const double *dy, const double *y, double *dx, int64_t n);
int mt_silu_forward_f32(const float *x, float *y, int64_t n);
int mt_silu_forward_f64(const double *x, double *y, int64_t n);
int mt_silu_backward_f32(const float *dy, const float *x, float *dx, int64_t n);
int mt_silu_backward_f64(const double *dy, const double *x, double *dx, int64_t n);
int mt_gelu_forward_f32(const float *x, float *y, int64_t n, int approximate);
int mt_gelu_forward_f64(const double *x, double *y, int64_t n, int approximate);
int mt_gelu_backward_f32(const float *dy, const float *x, float *dx, int64_t n,
                         int approximate);
int mt_gelu_backward_f64(const double *dy, const double *x, double *dx, int64_t n,
                         int approximate);
int mt_sqrt_forward_f32(const float *x, float *y, int64_t n);
int mt_sqrt_forward_f64(const double *x, double *y, int64_t n);
int mt_rsqrt_forward_f32(const float *x, float *y, int64_t n);
int mt_rsqrt_forward_f64(const double *x, double *y, int64_t n);
int mt_erf_forward_f32(const float *x, float *y, int64_t n);
int mt_erf_forward_f64(const double *x, double *y, int64_t n);
int mt_exp_forward_f32(const float *x, float *y, int64_t n);
int mt_exp_forward_f64(const double *x, double *y, int64_t n);
int mt_log_forward_f32(const float *x, float *y, int64_t n);
int mt_log_forward_f64(const double *x, double *y, int64_t n);
int mt_softplus_forward_f32(const float *x, float *y, int64_t n, float beta, float threshold);
int mt_softplus_forward_f64(const double *x, double *y, int64_t n, double beta,
                            double threshold);
int mt_pow_int_forward_f32(const float *x, float *y, int64_t n, int exponent);
int mt_pow_int_forward_f64(const double *x, double *y, int64_t n, int exponent);
int mt_pow_scalar_forward_f32(const float *x, float *y, int64_t n, double exponent);
int mt_pow_scalar_forward_f64(const double *x, double *y, int64_t n, double exponent);
int mt_abs_forward_f32(const float *x, float *y, int64_t n);
int mt_abs_forward_f64(const double *x, double *y, int64_t n);
int mt_abs_backward_f32(const float *dy, const float *x, float *dx, int64_t n);
int mt_abs_backward_f64(const double *dy, const double *x, double *dx, int64_t n);
/* where: y[j] = condition[j] ? a[j * a_step] : b[j * b_step] (condition: bool bytes, 0 false;
 * a_step, b_step 1 for an array of n elements, 0 for one value; other steps MT_ERR_ARGS):
 * torch.where and masked_fill, without a branch per element. */
int mt_where_f32(const uint8_t *condition, const float *a, const float *b, float *y, int64_t n,
                 int64_t a_step, int64_t b_step);
int mt_where_f64(const uint8_t *condition, const double *a, const double *b, double *y,
                 int64_t n, int64_t a_step, int64_t b_step);
int mt_clamp_forward_f32(const float *x, float *y, int64_t n, double min, double max);
int mt_clamp_forward_f64(const double *x, double *y, int64_t n, double min, double max);
int mt_clamp_backward_f32(const float *dy, const float *x, float *dx, int64_t n, double min,
                          double max);
int mt_clamp_backward_f64(const double *dy, const double *x, double *dx, int64_t n,
                          double min, double max);

/* ---- reductions over the last dim (reduce_rows.c) ----
 * x: rows x cols contiguous. sum_rows: y[r] = scale * sum_j x[r, j] (0 * scale for cols 0).
 * amax_rows: y[r] = max_j (largest) or min_j x[r, j], NaN if the row holds one; cols >= 1. */
int mt_sum_rows_f32(const float *x, float *y, int64_t rows, int64_t cols, double scale);
int mt_sum_rows_f64(const double *x, double *y, int64_t rows, int64_t cols, double scale);
int mt_amax_rows_f32(const float *x, float *y, int64_t rows, int64_t cols, int largest);
int mt_amax_rows_f64(const double *x, double *y, int64_t rows, int64_t cols, int largest);

/* ---- adding rows at indices (index_add_rows.c) ----
 * out = 0, then out[rows[i], :] += src[i, :] for i in [0, n): out is out_rows x cols, src
 * n x cols, both contiguous; indices may repeat. Every rows[i] must be in [0, out_rows) (else
 * MT_ERR_ARGS, nothing written). Each element's additions happen in the order of i. */
int mt_index_add_rows_f32(const float *src, const int64_t *rows, float *out, int64_t n,
                          int64_t cols, int64_t out_rows);
int mt_index_add_rows_f64(const double *src, const int64_t *rows, double *out, int64_t n,
                          int64_t cols, int64_t out_rows);

/* ---- running sums along rows (cumsum_rows.c) ----
 * y[r, j] = x[r, 0] + ... + x[r, j], summed in double; x and y rows x cols, contiguous, y may
 * be x. */
int mt_cumsum_rows_f32(const float *x, float *y, int64_t rows, int64_t cols);
int mt_cumsum_rows_f64(const double *x, double *y, int64_t rows, int64_t cols);

/* ---- arithmetic on every thread (arith.c) ----
 * y = a (op) b over rows x cols, op 0 add, 1 sub, 2 mul, 3 div, 4 maximum, 5 minimum (NaN if
 * either is NaN, b on a tie, as numpy's). Operand layouts: 0 full
 * (rows x cols), 1 row (cols values repeated on every row), 2 scalar (one value); at least one
 * operand is full. y is full, and may be a full operand. */
int mt_arith_f32(int op, const float *a, int a_layout, const float *b, int b_layout, float *y,
                 int64_t rows, int64_t cols);
int mt_arith_f64(int op, const double *a, int a_layout, const double *b, int b_layout,
                 double *y, int64_t rows, int64_t cols);
/* ---- one time step of the recurrent cells (rnn_cell.c) ----
 * xw = x W_ihᵀ + b_ih and hw = h W_hhᵀ (+ b_hh): rows x (gates * hidden), gates in PyTorch's
 * order; every other array rows x hidden, but act (LSTM, [i f g o]) and saved (GRU,
 * [r z n hw_n]), rows x 4 hidden. All contiguous; outputs must not overlap inputs.
 * rnn: h = tanh(xw + hw), or relu with relu != 0; backward dpre from h.
 * lstm: c = f c_prev + i g, h = o tanh(c); backward gives dgates (rows x 4 hidden), dc_prev.
 * gru: h = (1 - z) n + z h_prev, n = tanh(xw_n + r hw_n); backward gives dxw, dhw (rows x 3
 * hidden) and dh_prev = dh z, the direct path only (the caller adds dhw W_hh). */
int mt_rnn_cell_forward_f32(const float *xw, const float *hw, float *h, int64_t rows,
                            int64_t hidden, int relu);
int mt_rnn_cell_forward_f64(const double *xw, const double *hw, double *h, int64_t rows,
                            int64_t hidden, int relu);
int mt_rnn_cell_backward_f32(const float *dh, const float *h, float *dpre, int64_t rows,
                             int64_t hidden, int relu);
int mt_rnn_cell_backward_f64(const double *dh, const double *h, double *dpre, int64_t rows,
                             int64_t hidden, int relu);
int mt_lstm_cell_forward_f32(const float *xw, const float *hw, const float *c_prev, float *h,
                             float *c, float *act, int64_t rows, int64_t hidden);
int mt_lstm_cell_forward_f64(const double *xw, const double *hw, const double *c_prev,
                             double *h, double *c, double *act, int64_t rows, int64_t hidden);
int mt_lstm_cell_backward_f32(const float *dh, const float *dc, const float *c_prev,
                              const float *c, const float *act, float *dgates, float *dc_prev,
                              int64_t rows, int64_t hidden);
int mt_lstm_cell_backward_f64(const double *dh, const double *dc, const double *c_prev,
                              const double *c, const double *act, double *dgates,
                              double *dc_prev, int64_t rows, int64_t hidden);
int mt_gru_cell_forward_f32(const float *xw, const float *hw, const float *h_prev, float *h,
                            float *saved, int64_t rows, int64_t hidden);
int mt_gru_cell_forward_f64(const double *xw, const double *hw, const double *h_prev,
                            double *h, double *saved, int64_t rows, int64_t hidden);
int mt_gru_cell_backward_f32(const float *dh, const float *h_prev, const float *saved,
                             float *dxw, float *dhw, float *dh_prev, int64_t rows,
                             int64_t hidden);
int mt_gru_cell_backward_f64(const double *dh, const double *h_prev, const double *saved,
                             double *dxw, double *dhw, double *dh_prev, int64_t rows,
                             int64_t hidden);
/* ---- 2-d convolution as im2col + GEMM (conv2d.c) ----
 * x (n, c, h, w), weight (o, c / groups, kh, kw), bias (o) or NULL, y and dy (n, o, oh, ow) with
 * oh = (h + 2 pad_h - dilation_h (kh - 1) - 1) / stride_h + 1 (ow likewise), all contiguous.
 * y[n, o, i, j] = bias[o] + sum_{c, p, q} weight[o, c, p, q] *
 *                 x[n, g c/groups + c, i stride_h - pad_h + p dilation_h, ...] (0 outside x).
 * backward_input writes dx (n, c, h, w), backward_weight dweight (o, c / groups, kh, kw).
 * n >= 0; every other size, stride, dilation and groups >= 1, padding >= 0, c and o divisible
 * by groups, the dilated kernel within the padded input (else MT_ERR_ARGS). */
int mt_conv2d_forward_f32(const float *x, const float *weight, const float *bias, float *y,
                          int64_t n, int64_t c, int64_t h, int64_t w, int64_t o, int64_t kh,
                          int64_t kw, int64_t stride_h, int64_t stride_w, int64_t pad_h,
                          int64_t pad_w, int64_t dilation_h, int64_t dilation_w, int64_t groups);
int mt_conv2d_forward_f64(const double *x, const double *weight, const double *bias, double *y,
                          int64_t n, int64_t c, int64_t h, int64_t w, int64_t o, int64_t kh,
                          int64_t kw, int64_t stride_h, int64_t stride_w, int64_t pad_h,
                          int64_t pad_w, int64_t dilation_h, int64_t dilation_w, int64_t groups);
int mt_conv2d_backward_input_f32(const float *dy, const float *weight, float *dx, int64_t n,
                                 int64_t c, int64_t h, int64_t w, int64_t o, int64_t kh,
                                 int64_t kw, int64_t stride_h, int64_t stride_w, int64_t pad_h,
                                 int64_t pad_w, int64_t dilation_h, int64_t dilation_w,
                                 int64_t groups);
int mt_conv2d_backward_input_f64(const double *dy, const double *weight, double *dx, int64_t n,
                                 int64_t c, int64_t h, int64_t w, int64_t o, int64_t kh,
                                 int64_t kw, int64_t stride_h, int64_t stride_w, int64_t pad_h,
                                 int64_t pad_w, int64_t dilation_h, int64_t dilation_w,
                                 int64_t groups);
int mt_conv2d_backward_weight_f32(const float *dy, const float *x, float *dweight, int64_t n,
                                  int64_t c, int64_t h, int64_t w, int64_t o, int64_t kh,
                                  int64_t kw, int64_t stride_h, int64_t stride_w, int64_t pad_h,
                                  int64_t pad_w, int64_t dilation_h, int64_t dilation_w,
                                  int64_t groups);
int mt_conv2d_backward_weight_f64(const double *dy, const double *x, double *dweight,
                                  int64_t n, int64_t c, int64_t h, int64_t w, int64_t o,
                                  int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w,
                                  int64_t pad_h, int64_t pad_w, int64_t dilation_h,
                                  int64_t dilation_w, int64_t groups);
/* ---- max pooling over the last two dims (max_pool2d.c) ----
 * x (planes, h, w), y and indices (planes, oh, ow), contiguous. y[p, i, j] = the max of
 * x[p, i sh - ph + a dh, j sw - pw + b dw] over a < kh, b < kw inside x; indices[p, i, j] its
 * position r w + c (the first of equal maxima; a NaN wins). Each window must start inside x or
 * its left padding, padding at most half the dilated window (else MT_ERR_ARGS). Backward:
 * dx (planes, hw) = 0, then dx[p, indices[p, k]] += dy[p, k]; every index in [0, hw) (else
 * MT_ERR_ARGS, nothing written). */
int mt_max_pool2d_forward_f32(const float *x, float *y, int64_t *indices, int64_t planes,
                              int64_t h, int64_t w, int64_t oh, int64_t ow, int64_t kh,
                              int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                              int64_t dh, int64_t dw);
int mt_max_pool2d_forward_f64(const double *x, double *y, int64_t *indices, int64_t planes,
                              int64_t h, int64_t w, int64_t oh, int64_t ow, int64_t kh,
                              int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                              int64_t dh, int64_t dw);
int mt_max_pool2d_backward_f32(const float *dy, const int64_t *indices, float *dx,
                               int64_t planes, int64_t hw, int64_t ohw);
int mt_max_pool2d_backward_f64(const double *dy, const int64_t *indices, double *dx,
                               int64_t planes, int64_t hw, int64_t ohw);
/* ---- batch normalization with the batch's statistics (batch_norm.c) ----
 * x, y, dy, dx (n, channels, inner), contiguous; weight, bias, mean, var, rstd, dweight, dbias
 * (channels,). Forward: per channel c, mean and biased var over its n * inner values,
 * rstd = 1 / sqrt(var + eps), y = (x - mean) rstd weight + bias (weight, bias NULL: 1, 0).
 * Backward: dbias = sum dy, dweight = sum dy xhat, dx = rstd weight (dy - mean dy - xhat
 * mean(dy xhat)), xhat = (x - mean) rstd. n, channels, inner >= 1, eps >= 0 (else
 * MT_ERR_ARGS). */
int mt_batch_norm_forward_f32(const float *x, const float *weight, const float *bias, float *y,
                              float *mean, float *var, float *rstd, int64_t n, int64_t channels,
                              int64_t inner, double eps);
int mt_batch_norm_forward_f64(const double *x, const double *weight, const double *bias,
                              double *y, double *mean, double *var, double *rstd, int64_t n,
                              int64_t channels, int64_t inner, double eps);
int mt_batch_norm_backward_f32(const float *dy, const float *x, const float *weight,
                               const float *mean, const float *rstd, float *dx, float *dweight,
                               float *dbias, int64_t n, int64_t channels, int64_t inner);
int mt_batch_norm_backward_f64(const double *dy, const double *x, const double *weight,
                               const double *mean, const double *rstd, double *dx,
                               double *dweight, double *dbias, int64_t n, int64_t channels,
                               int64_t inner);
/* ---- one Adam / AdamW step over a list of parameters, in place (adam.c) ----
 * For t < count: params[t], grads[t], exp_avgs[t], exp_avg_sqs[t] (and max_exp_avg_sqs[t]
 * when max_exp_avg_sqs is not NULL: amsgrad) hold sizes[t] contiguous elements each, none
 * overlapping another; step_sizes[t] = lr / (1 - beta1^step) and bias_correction2_sqrts[t] =
 * sqrt(1 - beta2^step) for that parameter's step. torch.optim.Adam's update, rounded as
 * PyTorch rounds it; decoupled_weight_decay != 0 makes it AdamW. */
int mt_adam_step_f32(int64_t count, float *const *params, const float *const *grads,
                     float *const *exp_avgs, float *const *exp_avg_sqs,
                     float *const *max_exp_avg_sqs, const int64_t *sizes,
                     const double *step_sizes, const double *bias_correction2_sqrts, double lr,
                     double beta1, double beta2, double eps, double weight_decay,
                     int decoupled_weight_decay, int maximize);
int mt_adam_step_f64(int64_t count, double *const *params, const double *const *grads,
                     double *const *exp_avgs, double *const *exp_avg_sqs,
                     double *const *max_exp_avg_sqs, const int64_t *sizes,
                     const double *step_sizes, const double *bias_correction2_sqrts, double lr,
                     double beta1, double beta2, double eps, double weight_decay,
                     int decoupled_weight_decay, int maximize);
/* ---- copies between strided layouts (copy_rows.c) ----
 * dst[i * dst_stride + k] = src[i * src_stride + k] for i < rows, k < row_bytes (strides in
 * bytes; any dtype: bytes are copied). src and dst must not overlap. */
int mt_copy_rows(const void *src, int64_t src_stride, void *dst, int64_t dst_stride,
                 int64_t rows, int64_t row_bytes);
/* dst (C-contiguous, ndim dims of shape) = src, whose element strides in bytes are src_strides
 * (any sign, 0 where it broadcasts): dst[n] = src[sum_d index_d(n) * src_strides[d]], items of
 * itemsize bytes; ndim at most MT_COPY_MAX_DIMS (numpy's limit). */
#define MT_COPY_MAX_DIMS 64
int mt_copy_strided(const void *src, void *dst, int64_t ndim, const int64_t *shape,
                    const int64_t *src_strides, int64_t itemsize);
/* ---- sums down the columns (sum_cols.c) ----
 * x: rows x cols contiguous; y[j] = sum_i x[i, j] (0 for rows 0), summed in the element type
 * in row order (numpy's order for axis 0): a bias gradient. */
int mt_sum_cols_f32(const float *x, float *y, int64_t rows, int64_t cols);
int mt_sum_cols_f64(const double *x, double *y, int64_t rows, int64_t cols);
/* ---- one attention step of incremental decoding (attention_step.c) ----
 * For batch row n, head h, query i: w = softmax(scale * q[n,h,i,:] kt[n,h,:,:] + mask) over
 * the s keys, out[n,i,h,:] = w v[n,h,:,:]; weights (n, h, l, s) and out (n, l, h, dv) are
 * contiguous. q, kt, v: element strides of their first three dims (last dim unit stride);
 * mask (bool, True = excluded, may be NULL): four strides (0 where it broadcasts).
 * causal_offset >= 0 excludes key j > i + causal_offset; < 0: none. A query with every key
 * excluded gets zeros. Sums in double. */
int mt_attention_step_forward_f32(const float *q, const float *kt, const float *v,
                                  const uint8_t *mask, float *out, float *weights, int64_t n,
                                  int64_t h, int64_t l, int64_t s, int64_t d, int64_t dv,
                                  const int64_t *q_strides, const int64_t *kt_strides,
                                  const int64_t *v_strides, const int64_t *mask_strides,
                                  double scale, int64_t causal_offset);
int mt_attention_step_forward_f64(const double *q, const double *kt, const double *v,
                                  const uint8_t *mask, double *out, double *weights, int64_t n,
                                  int64_t h, int64_t l, int64_t s, int64_t d, int64_t dv,
                                  const int64_t *q_strides, const int64_t *kt_strides,
                                  const int64_t *v_strides, const int64_t *mask_strides,
                                  double scale, int64_t causal_offset);
/* ---- dropout's factors (dropout.c) ----
 * keep[j] = scale where bits j of splitmix64's stream from `seed` (32 per element: the low then
 * the high half of each 64-bit output) are >= threshold, else 0: dropout with p = threshold /
 * 2^32 and scale 1 / (1 - p). Element j's bits depend on (seed, j) only. */
int mt_dropout_keep_f32(float *keep, int64_t n, uint64_t seed, uint32_t threshold, float scale);
int mt_dropout_keep_f64(double *keep, int64_t n, uint64_t seed, uint32_t threshold,
                        double scale);
/* ---- multi-head attention over whole sequences, forward and backward (attention.c) ----
 * For batch row b < n and head g < h, the head's q (l x d), k (s x d), v (s x dv) and out,
 * dout, dq, dk, dv (l or s rows) are read and written through `strides`: three element strides
 * per array (batch, head, row; features unit stride), in the order of the arguments.
 *   forward:  weights[b,g] = softmax(scale * q k^T + mask)   (n x h x l x s, contiguous)
 *             out = weights[b,g] v
 *   backward: dz = scale * w (dout v^T - rowsum(w (dout v^T)))   (w = weights[b,g])
 *             dq = dz k ; dk = dz^T q ; dv = w^T dout
 * The mask is the softmax kernel's: mask_add or mask_bool (at most one; True = excluded) over
 * the rows (n, h, l) by mask_row_strides (3 entries, 0 where it broadcasts) and over the keys
 * by mask_col_stride (0 or 1); causal != 0 excludes key j > query i. A query with every key
 * excluded has zero weights, output and gradients. The output arrays must not overlap the
 * inputs; dq, dk and dv may be disjoint parts of one array. The reference body sums in double;
 * the tuned one gives the unfused GEMM and softmax kernels' values, bit for bit.
 * keep (n x h x l x s, contiguous; NULL for none) is dropout on the weights, 0 or 1/(1-p): out =
 * (w keep) v, and the backward is that product's (p = keep (dout v^T), dv = (w keep)^T dout);
 * weights stays the softmax. */
int mt_attention_forward_f32(const float *q, const float *k, const float *v, float *out,
                             float *weights, int64_t n, int64_t h, int64_t l, int64_t s,
                             int64_t d, int64_t dv, const int64_t *strides, float scale,
                             const float *mask_add, const uint8_t *mask_bool,
                             const int64_t *mask_row_strides, int64_t mask_col_stride,
                             int causal, const float *keep);
int mt_attention_forward_f64(const double *q, const double *k, const double *v, double *out,
                             double *weights, int64_t n, int64_t h, int64_t l, int64_t s,
                             int64_t d, int64_t dv, const int64_t *strides, double scale,
                             const double *mask_add, const uint8_t *mask_bool,
                             const int64_t *mask_row_strides, int64_t mask_col_stride,
                             int causal, const double *keep);
int mt_attention_backward_f32(const float *q, const float *k, const float *v,
                              const float *weights, const float *dout, float *dq, float *dk,
                              float *dv_out, int64_t n, int64_t h, int64_t l, int64_t s,
                              int64_t d, int64_t dv, const int64_t *strides, float scale,
                              const float *keep);
int mt_attention_backward_f64(const double *q, const double *k, const double *v,
                              const double *weights, const double *dout, double *dq,
                              double *dk, double *dv_out, int64_t n, int64_t h, int64_t l,
                              int64_t s, int64_t d, int64_t dv, const int64_t *strides,
                              double scale, const double *keep);
/* ---- gather along a dim (gather.c) and its adjoint, scatter-add (scatter_add.c) ----
 * The arrays are seen as 3-d around the dim: x and out of scatter_add (outer, size, inner),
 * index, src and out of gather (outer, n, inner), all contiguous. An index below 0 counts from
 * the end; each must lie in [-size, size) (else MT_ERR_ARGS, the output is partial).
 * gather_forward: out[a, j, b] = x[a, index[a, j, b], b], elements of itemsize 1, 2, 4 or 8
 * bytes (it only moves them: any dtype). scatter_add: out = base (zeros where base is NULL),
 * then out[a, index[a, j, b], b] += src[a, j, b], each element's additions in the order of j. */
int mt_gather_forward(const void *x, const int64_t *index, void *out, int64_t itemsize,
                      int64_t outer, int64_t size, int64_t n, int64_t inner);
int mt_scatter_add_f32(const float *base, const float *src, const int64_t *index, float *out,
                       int64_t outer, int64_t size, int64_t n, int64_t inner);
int mt_scatter_add_f64(const double *base, const double *src, const int64_t *index,
                       double *out, int64_t outer, int64_t size, int64_t n, int64_t inner);
/* ---- the lower or upper triangle of matrices (triangle.c) ----
 * x, out (matrices, rows, cols) contiguous, elements of itemsize bytes (any dtype):
 * out[m, i, j] = x[m, i, j] where j - i <= diagonal (upper == 0) or j - i >= diagonal
 * (upper != 0), zero bytes elsewhere. */
int mt_keep_triangle(const void *x, void *out, int64_t itemsize, int64_t matrices, int64_t rows,
                     int64_t cols, int64_t diagonal, int upper);
/* ---- a bias added to every row, then ReLU (bias_relu.c) ----
 * x, y, dy, dx: rows x cols contiguous, bias and dbias: cols. Forward y = max(x + bias, 0)
 * (NaN stays NaN; y may be x); backward dx = 0 where y <= 0 else dy (dx may be dy) and
 * dbias[j] = sum_i dx[i, j], summed in the element type in row order (as sum_cols). */
int mt_bias_relu_forward_f32(const float *x, const float *bias, float *y, int64_t rows,
                             int64_t cols);
int mt_bias_relu_forward_f64(const double *x, const double *bias, double *y, int64_t rows,
                             int64_t cols);
int mt_bias_relu_backward_f32(const float *dy, const float *y, float *dx, float *dbias,
                              int64_t rows, int64_t cols);
int mt_bias_relu_backward_f64(const double *dy, const double *y, double *dx, double *dbias,
                              int64_t rows, int64_t cols);
/* END CDEF */

#ifdef __cplusplus
}
#endif

#endif /* MINITORCH_H */
