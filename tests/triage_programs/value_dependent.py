"""not_triaged: the launch grid depends on a tensor's values (meta tensors have none)."""


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        blocks = int((a.abs() >= 0).sum().item()) // 32
        add_kernel[(blocks,)](a, b, out, a.numel(), BLOCK=32)
        return out
