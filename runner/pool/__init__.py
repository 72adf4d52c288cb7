"""The parent's side of a job: the sandbox that starts and watches children, spare children, the GPU gate."""
