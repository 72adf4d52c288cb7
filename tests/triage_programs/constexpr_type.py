"""compile_error: a constexpr of the wrong type (a float where tl.arange needs an int)."""


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        add_kernel[(2,)](a, b, out, a.numel(), BLOCK=32.0)
        return out
