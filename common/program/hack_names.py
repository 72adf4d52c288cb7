"""What the static hack checks (`common/program/hack_checks.py`) look for, by name: torch's compute ops and `nn` compute
layers (`torch_compute_in_forward`: allocation, shape and copy ops are deliberately absent), stream, thread, timing,
frame and precision names, the torch settings a candidate may set, allocations and containers."""

from __future__ import annotations

COMPUTE_OPS = frozenset("""
matmul mm bmm addmm addmv addbmm baddbmm mv dot einsum tensordot linear bilinear conv1d conv2d conv3d
conv_transpose1d conv_transpose2d conv_transpose3d relu relu6 gelu silu sigmoid tanh softmax log_softmax softmin
softplus softsign mish elu selu celu leaky_relu hardtanh hardswish hardsigmoid prelu glu logsigmoid tanhshrink
layer_norm batch_norm group_norm instance_norm rms_norm local_response_norm normalize dropout max_pool1d max_pool2d
max_pool3d avg_pool1d avg_pool2d avg_pool3d adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d
adaptive_max_pool1d adaptive_max_pool2d adaptive_max_pool3d lp_pool2d scaled_dot_product_attention embedding
interpolate grid_sample unfold fold pixel_shuffle sum mean prod amax amin max min argmax argmin logsumexp cumsum
cumprod var std norm topk sort exp exp2 expm1 log log2 log10 log1p sqrt rsqrt pow abs clamp clip erf erfc
reciprocal sin cos tan mul add sub div true_divide floor_divide neg square addcmul addcdiv lerp where
cross_entropy nll_loss mse_loss l1_loss smooth_l1_loss huber_loss kl_div binary_cross_entropy
binary_cross_entropy_with_logits cosine_similarity pairwise_distance cdist triplet_margin_loss hinge_embedding_loss
margin_ranking_loss cosine_embedding_loss lstm gru rnn_tanh multi_head_attention_forward
""".split())
NN_COMPUTE_LAYERS = frozenset("""
Linear Bilinear LazyLinear Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d ReLU ReLU6 GELU SiLU
Sigmoid Tanh Softmax LogSoftmax Softmin Softplus Mish ELU SELU CELU LeakyReLU Hardtanh Hardswish Hardsigmoid PReLU
GLU LayerNorm BatchNorm1d BatchNorm2d BatchNorm3d GroupNorm InstanceNorm1d InstanceNorm2d InstanceNorm3d RMSNorm
LocalResponseNorm Dropout MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d
AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d Embedding EmbeddingBag
MultiheadAttention Transformer TransformerEncoder TransformerEncoderLayer TransformerDecoderLayer LSTM GRU RNN
Upsample CrossEntropyLoss MSELoss Sequential
""".split())
TORCH_ROOTS = ("torch", "F", "nn", "functional")
NOT_TENSORS = frozenset({"math", "np", "numpy", "triton", "tl", "random", "operator", "builtins", "statistics",
                         "itertools", "functools", "os", "sys", "time", "cmath", "re", "json"})
STREAM_NAMES = frozenset({"Stream", "ExternalStream", "set_stream", "wait_stream", "StreamContext"})
THREAD_MODULES = frozenset({"threading", "multiprocessing", "_thread", "concurrent"})
THREAD_NAMES = frozenset({"Thread", "ThreadPoolExecutor", "ProcessPoolExecutor", "fork"})
TIMING_TARGETS = ("cuda.Event", "Event.record", "Event.elapsed_time", "Event.synchronize", "cuda.synchronize",
                  "time.perf_counter", "time.perf_counter_ns", "time.time", "time.time_ns", "time.monotonic",
                  "time.monotonic_ns", "time.process_time", "do_bench", "do_bench_cudagraph", "Timer.timeit")
LOW_PRECISION = frozenset({"float16", "half", "bfloat16"})
FRAME_ATTRS = frozenset({"_getframe", "f_back", "f_locals", "f_globals", "get_referrers", "get_objects"})
FRAME_CALLS = ("inspect.stack", "inspect.currentframe", "inspect.getouterframes", "inspect.getframeinfo")
# torch settings a candidate may set (backend flags, compiler configs): not a patch of torch
TORCH_SETTINGS = ("torch.backends.", "torch._dynamo.", "torch._inductor.", "torch.jit.", "torch._C._jit")
ALLOCATIONS = frozenset({"empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
                         "new_empty", "new_zeros", "new_ones", "new_full", "empty_strided"})
CONTAINERS = frozenset({"dict", "list", "set", "OrderedDict", "defaultdict", "WeakValueDictionary", "deque"})
TENSOR_SUBCLASS_HOOKS = frozenset({"__torch_function__", "__torch_dispatch__", "as_subclass", "_make_subclass",
                                   "_make_wrapper_subclass"})
CLOCK_CALLS = frozenset({f"time.{name}{ns}" for name in ("time", "perf_counter", "monotonic", "process_time",
                                                         "thread_time", "clock_gettime") for ns in ("", "_ns")}
                        | {"timeit.default_timer", "datetime.datetime.now", "datetime.now", "datetime.datetime.utcnow"})
STACK_CALLS = frozenset({"sys._getframe", "inspect.stack", "inspect.currentframe", "inspect.getouterframes",
                         "inspect.getframeinfo", "inspect.trace", "traceback.extract_stack", "traceback.format_stack",
                         "traceback.walk_stack", "traceback.print_stack"})
