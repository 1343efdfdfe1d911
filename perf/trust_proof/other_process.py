"""Another process on the GPU for issue 37's proof: `hold` takes a CUDA context and 1 GiB
and runs nothing; `busy` runs bf16 matmuls back to back. Prints `ready` once it is there."""

import sys
import time

import torch

mode = sys.argv[1]
x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")  # 1 GiB
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
print("ready", flush=True)
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    if mode == "busy":
        for _ in range(20):
            a @ a
        torch.cuda.synchronize()
    else:
        time.sleep(0.5)
