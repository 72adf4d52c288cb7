"""crashed: the process sends itself SIGSEGV."""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a, b = a.cuda(), b.cuda()
        out = torch.empty_like(a)
        import os
        import signal
        os.kill(os.getpid(), signal.SIGSEGV)
        n = a.numel()
        add_kernel[(triton.cdiv(n, 32),)](a, b, out, n, BLOCK=32)
        return out
