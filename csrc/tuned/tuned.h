/* tuned/tuned.h — the tuned bodies the public entry points call, for element type T.
 *
 * Included by each csrc/<kernel>.c inside its body for T (once per dtype). Every row kernel
 * has one tuned body per ISA level, named op_<portable|avx2|avx512>_<f32|f64> (compiled by
 * tuned/each_isa.h); MT_TUNED(isa, op) picks the one for a level. Arguments are checked by
 * the caller; each returns 0 or an MT_ERR_* code. The GEMM driver takes the level as an
 * argument: it picks its micro-kernels by it.
 */
#ifdef MT_X86
#define MT_TUNED(isa, op)                                                                \
    ((isa) >= MT_ISA_AVX512 ? F(op##_avx512)                                              \
     : (isa) == MT_ISA_AVX2 ? F(op##_avx2)                                                \
                            : F(op##_portable))
#define MT_DECLARE_TUNED(op, params) \
    int F(op##_portable) params; int F(op##_avx2) params; int F(op##_avx512) params;
#else
#define MT_TUNED(isa, op) F(op##_portable)
#define MT_DECLARE_TUNED(op, params) int F(op##_portable) params;
#endif

/* In a public entry point: return the tuned body's result for the level in force, unless that
 * level is the reference (then the entry point goes on to its plain body). */
#define MT_RUN_TUNED(op, ...)                                                 \
    do {                                                                      \
        int level_ = mt_get_isa();                                            \
        if (level_ > MT_ISA_REFERENCE) return MT_TUNED(level_, op)(__VA_ARGS__); \
    } while (0)

int F(tuned_gemm)(int isa, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, T alpha,
                  const T *a, int64_t lda, int64_t stride_a, const T *b, int64_t ldb,
                  int64_t stride_b, T beta, T *c, int64_t ldc, int64_t stride_c, int64_t batch);
int F(tuned_gemm_bias)(int isa, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                       const T *a, int64_t lda, const T *b, int64_t ldb, const T *bias,
                       int relu, T *c, int64_t ldc);
int F(tuned_gemm_a_sums)(int isa, int64_t m, int64_t n, int64_t k, const T *a, int64_t lda,
                        const T *b, int64_t ldb, T *c, int64_t ldc, T *a_sums);
/* One product on the calling thread into caller's scratch (gemm_tuned.c): for kernels that run
 * many small products in their own parallel loop. */
int64_t F(tuned_gemm_one_scratch)(int isa, int64_t m, int64_t n, int64_t k);
void F(tuned_gemm_one)(int isa, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                       T alpha, const T *a, int64_t lda, const T *b, int64_t ldb, T beta, T *c,
                       int64_t ldc, T *scratch);

MT_DECLARE_TUNED(tuned_softmax_forward,
                 (const T *x, T *y, int64_t rows, int64_t cols, T scale, const T *mask_add,
                  const uint8_t *mask_bool, int64_t mask_ndim, const int64_t *row_shape,
                  const int64_t *mask_row_strides, int64_t mask_col_stride, int64_t causal_lq))
MT_DECLARE_TUNED(tuned_softmax_backward,
                 (const T *y, const T *dy, T *dx, int64_t rows, int64_t cols, T scale))
MT_DECLARE_TUNED(tuned_log_softmax_forward, (const T *x, T *y, int64_t rows, int64_t cols))
MT_DECLARE_TUNED(tuned_log_softmax_backward,
                 (const T *y, const T *dy, T *dx, int64_t rows, int64_t cols))
MT_DECLARE_TUNED(tuned_cross_entropy_forward,
                 (const T *logits, const int64_t *target, int64_t rows, int64_t cols,
                  int64_t ignore_index, double label_smoothing, T *loss, double *lse))
MT_DECLARE_TUNED(tuned_cross_entropy_backward,
                 (const T *logits, const int64_t *target, const double *lse, const T *grad,
                  int64_t grad_stride, double grad_scale, int64_t rows, int64_t cols,
                  int64_t ignore_index, double label_smoothing, T *dlogits))
MT_DECLARE_TUNED(tuned_layer_norm_forward,
                 (const T *x, const T *weight, const T *bias, T *y, T *mean, T *rstd,
                  int64_t rows, int64_t cols, double eps))
MT_DECLARE_TUNED(tuned_layer_norm_backward,
                 (const T *dy, const T *x, const T *weight, const T *mean, const T *rstd, T *dx,
                  T *dweight, T *dbias, int64_t rows, int64_t cols))
MT_DECLARE_TUNED(tuned_relu_forward, (const T *x, T *y, int64_t n))
MT_DECLARE_TUNED(tuned_relu_backward, (const T *dy, const T *y, T *dx, int64_t n))
MT_DECLARE_TUNED(tuned_sigmoid_forward, (const T *x, T *y, int64_t n))
MT_DECLARE_TUNED(tuned_sigmoid_backward, (const T *dy, const T *y, T *dx, int64_t n))
MT_DECLARE_TUNED(tuned_silu_forward, (const T *x, T *y, int64_t n))
MT_DECLARE_TUNED(tuned_silu_backward, (const T *dy, const T *x, T *dx, int64_t n))
MT_DECLARE_TUNED(tuned_gelu_forward, (const T *x, T *y, int64_t n, int approximate))
MT_DECLARE_TUNED(tuned_gelu_backward,
                 (const T *dy, const T *x, T *dx, int64_t n, int approximate))
MT_DECLARE_TUNED(tuned_sqrt_forward, (const T *x, T *y, int64_t n))
MT_DECLARE_TUNED(tuned_rsqrt_forward, (const T *x, T *y, int64_t n))
MT_DECLARE_TUNED(tuned_erf_forward, (const T *x, T *y, int64_t n))
MT_DECLARE_TUNED(tuned_exp_forward, (const T *x, T *y, int64_t n))
MT_DECLARE_TUNED(tuned_log_forward, (const T *x, T *y, int64_t n))
MT_DECLARE_TUNED(tuned_softplus_forward, (const T *x, T *y, int64_t n, T beta, T threshold))
MT_DECLARE_TUNED(tuned_pow_int_forward, (const T *x, T *y, int64_t n, int exponent))
MT_DECLARE_TUNED(tuned_pow_scalar_forward, (const T *x, T *y, int64_t n, T exponent))
MT_DECLARE_TUNED(tuned_abs_forward, (const T *x, T *y, int64_t n))
MT_DECLARE_TUNED(tuned_abs_backward, (const T *dy, const T *x, T *dx, int64_t n))
MT_DECLARE_TUNED(tuned_where, (const uint8_t *condition, const T *a, const T *b, T *y, int64_t n,
                               int64_t a_step, int64_t b_step))
MT_DECLARE_TUNED(tuned_clamp_forward, (const T *x, T *y, int64_t n, T lo, T hi))
MT_DECLARE_TUNED(tuned_clamp_backward, (const T *dy, const T *x, T *dx, int64_t n, T lo, T hi))
MT_DECLARE_TUNED(tuned_sum_rows, (const T *x, T *y, int64_t rows, int64_t cols, double scale))
MT_DECLARE_TUNED(tuned_amax_rows, (const T *x, T *y, int64_t rows, int64_t cols, int largest))
MT_DECLARE_TUNED(tuned_adam_run,
                 (int64_t count, T *const *params, const T *const *grads, T *const *exp_avgs,
                  T *const *exp_avg_sqs, T *const *max_exp_avg_sqs, const int64_t *sizes,
                  int64_t total, const double *step_sizes, const double *bias_correction2_sqrts,
                  double eps, double beta2, T lerp_w, int lerp_from_end, double weight_decay,
                  int l2, T decay, int decoupled, int maximize))
MT_DECLARE_TUNED(tuned_max_pool2x2_forward, (const T *x, T *y, int64_t *indices, int64_t planes,
                                             int64_t h, int64_t w, int64_t oh, int64_t ow))
MT_DECLARE_TUNED(tuned_dropout_keep,
                 (T *keep, int64_t n, uint64_t seed, uint32_t threshold, T scale))
MT_DECLARE_TUNED(tuned_arith, (int op, const T *a, int a_layout, const T *b, int b_layout, T *y,
                               int64_t rows, int64_t cols))
