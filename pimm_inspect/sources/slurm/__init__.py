"""What the Slurm job left: ``launch.sbatch``, ``slurm-<jobid>.out`` logs, pimm's per-rank structured logs.

``sbatch`` reads the submitit batch script's ``#SBATCH`` directives; ``slurm_log`` streams a Slurm log and cuts
it at each submitit attempt marker, with each attempt's ending (requeued, time limit, preemption, OOM, NCCL);
``rank_logs`` reads ``structured_logs/*.jsonl*`` (one line per event per rank). Each module's ``read`` follows
the reader protocol; lines are bounded and every string stays data.
"""
