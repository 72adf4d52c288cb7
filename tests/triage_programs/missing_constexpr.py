"""launch_error: the launch leaves out the kernel's constexpr BLOCK."""


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        add_kernel[(2,)](a, b, out, a.numel())
        return out
