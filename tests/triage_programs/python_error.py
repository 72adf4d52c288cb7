"""runtime_error: forward uses a module it never imported, before any kernel runs."""


class ModelNew(nn.Module):
    def forward(self, a, b):
        block = 2 ** math.ceil(math.log2(a.numel()))
        out = torch.empty_like(a)
        add_kernel[(1,)](a, b, out, a.numel(), BLOCK=block)
        return out
