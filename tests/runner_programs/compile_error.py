"""compile_error: the kernel uses an undefined name."""


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_undefined  # noqa: F821
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a, b = a.cuda(), b.cuda()
        out = torch.empty_like(a)
        n = a.numel()
        add_kernel[(triton.cdiv(n, 32),)](a, b, out, n, BLOCK=32)
        return out
