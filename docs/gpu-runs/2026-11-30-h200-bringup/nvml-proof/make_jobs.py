import sys
sys.path.insert(0, "tests")
from fake_servers import fake_job
for mode in ("ok", "gpu_leak"):
    job = fake_job(mode, points=1, extra_env={"FAKE_GPU_MIB": "4096", "FAKE_LEAK_PID_FILE": "/tmp/leak.pid"})
    job.cases[0].servers[0].devices = [0]
    job.gpus = 1
    open(f"/tmp/job-{mode}.json", "w").write(job.model_dump_json())
