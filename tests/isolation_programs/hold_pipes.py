"""Leaves a grandchild in a session of its own holding the job's stdout and stderr (TAG, appended by the test, is
in its command line), then hangs: the timeout must hold anyway."""

import subprocess
import sys
import time

import torch.nn as nn

TAG = ""


class ModelNew(nn.Module):
    def forward(self, a, b):
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", f"{TAG}-holder"],
                         start_new_session=True)  # inherits stdout and stderr
        time.sleep(300)
        return triton_add(a, b)
