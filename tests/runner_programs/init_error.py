"""init_error: ModelNew's constructor raises."""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        raise ValueError("bad config")

    def forward(self, a, b):
        a, b = a.cuda(), b.cuda()
        out = torch.empty_like(a)
        n = a.numel()
        add_kernel[(triton.cdiv(n, 32),)](a, b, out, n, BLOCK=32)
        return out
