"""compile_error: tl.dot of blocks whose inner dimensions differ ((16, 32) @ (16, 16))."""


@triton.jit
def bad_dot_kernel(a_ptr, b_ptr, out_ptr, M: tl.constexpr, K: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, K)
    a = tl.load(a_ptr + rows[:, None] * K + cols[None, :])
    b = tl.load(b_ptr + rows[:, None] * M + rows[None, :])
    tl.store(out_ptr + rows[:, None] * M + rows[None, :], tl.dot(a, b))


class ModelNew(nn.Module):
    def forward(self, a, b):
        x = torch.empty(16, 32, device=a.device)
        y = torch.empty(16, 16, device=a.device)
        out = torch.empty(16, 16, device=a.device)
        bad_dot_kernel[(1,)](x, y, out, M=16, K=32)
        return a + b
