"""compile_error: a kernel indexes a block with a constant (Triton: unsupported tensor index)."""


@triton.jit
def first_kernel(a_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    block = tl.load(a_ptr + offs, mask=offs < n)
    tl.store(out_ptr, block[0])


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        first_kernel[(1,)](a, out, a.numel(), BLOCK=64)
        return out
