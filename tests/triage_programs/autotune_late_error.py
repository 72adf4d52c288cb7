"""compile_error: an autotuned kernel whose first config compiles and fits, and whose third config is a front-end
error (tl.arange over 96, not a power of 2): the GPU's autotuner compiles every config and fails on it."""


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=4), triton.Config({"BLOCK": 64}, num_warps=8),
                          triton.Config({"BLOCK": 96}, num_warps=4)], key=["n"])
@triton.jit
def tuned_add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        tuned_add_kernel[lambda meta: (triton.cdiv(a.numel(), meta["BLOCK"]),)](a, b, out, a.numel())
        return out
