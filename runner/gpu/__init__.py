"""GPU scheduling: slots per GPU, the gate shared by a GPU's jobs and across a host's processes, cores, reference timings."""
