"""out_of_memory via the RSS watchdog: touches 3 GiB of shared anonymous memory (not counted by RLIMIT_DATA)."""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a, b = a.cuda(), b.cuda()
        out = torch.empty_like(a)
        import mmap
        m = mmap.mmap(-1, 3 << 30)
        chunk = b"x" * (1 << 20)
        for i in range(0, 3 << 30, 1 << 20):
            m[i:i + (1 << 20)] = chunk
        n = a.numel()
        add_kernel[(triton.cdiv(n, 32),)](a, b, out, n, BLOCK=32)
        return out
