"""out_of_memory: allocates 8 GiB on the host (over the memory limit set by the test)."""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a, b = a.cuda(), b.cuda()
        out = torch.empty_like(a)
        hog = torch.ones(8 << 30, dtype=torch.uint8)
        n = a.numel() + int(hog[0]) - 1
        add_kernel[(triton.cdiv(n, 32),)](a, b, out, n, BLOCK=32)
        return out
