"""not_triaged (honest): ModelNew replays its launch from a CUDA graph, which needs a real device."""


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            add_kernel[(2,)](a, b, out, a.numel(), BLOCK=32)
        graph.replay()
        return out
