"""runtime_error: the launch wrapper divides by zero."""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a, b = a.cuda(), b.cuda()
        out = torch.empty_like(a)
        n = a.numel() // 0
        add_kernel[(triton.cdiv(n, 32),)](a, b, out, n, BLOCK=32)
        return out
