"""nan_output: writes NaN into one element."""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a, b = a.cuda(), b.cuda()
        out = torch.empty_like(a)
        n = a.numel()
        add_kernel[(triton.cdiv(n, 32),)](a, b, out, n, BLOCK=32)
        out[3] = float("nan")
        return out
