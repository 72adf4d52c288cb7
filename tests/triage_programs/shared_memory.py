"""compile_error: a matmul whose pipelined tiles need more shared memory than sm_90 has (OutOfResources). Triton
knows it only from the shared-memory allocation that starts LLVM IR's lowering: a triage that stopped after
TritonGPU IR would pass it."""


@triton.jit
def big_tiles_kernel(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


class ModelNew(nn.Module):
    def forward(self, a, b):
        x = torch.empty(256, 1024, device=a.device, dtype=torch.float16)
        y = torch.empty(1024, 256, device=a.device, dtype=torch.float16)
        c = torch.empty(256, 256, device=a.device)
        big_tiles_kernel[(1,)](x, y, c, 1024, BM=256, BN=256, BK=128, num_stages=4)
        return a + b
