"""CPU triage (issue 41): why a program fails, without a GPU.

A triage imports the program, builds `Model`, `ModelNew` and the inputs on torch's `meta` device (shapes and dtypes,
no data), calls both forwards with every Triton launch compiled for a named GPU target and not run, and compares the
outputs' structure, shapes and dtypes. `passed` means "compiles and shapes match: the rest needs a GPU".

- `stand_in.py`: the stand-in GPU (CUDA calls answered on `meta`, a Triton driver that names the target, launches
  and autotuning compiled, not run);
- `stages.py`: which of Triton's compile stages run (those that raise errors) and which autotune configs compile
  whole;
- `program.py`: one program's triage, stage by stage, as a result dict; `warm_up.py`: the trusted program each
  worker triages before its first fork;
- `worker.py`: a warm worker process inside the job isolation, forking a fresh child per program;
- `pool.py`: the workers of a triage run; `command.py`: `python -m runner triage`.
"""
