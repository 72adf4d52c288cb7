"""launch_error: the launch passes a keyword the kernel does not take."""


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        add_kernel[(2,)](a, b, out, a.numel(), BLOCK=32, BLOCK_SIZE=32)
        return out
