"""tritonserver for bench/vs_triton.sh, started by myops_testing.triton (TritonProcess,
with the launcher's flags): a model repository (by default one written here, serving
myops::scale_shift with the hand-written scaleshift backend, one CPU instance per core,
as myops-server runs one CPU worker per core), a backend directory with the backend of
--backend. Once every model is ready it prints

    triton pid PID
    listening on 127.0.0.1:GRPC_PORT

(the line scripts/servers.sh waits for), then serves until SIGTERM or SIGINT, stops
Triton with SIGTERM and exits with its status.

    python bench/triton_serve.py --work DIR [--backend DIR] [--models DIR]
                                 [--instances N] [--preload LIB]

--backend: a folder holding one libtriton_<name>.so (default: the scaleshift peer in
$MYOPS_BUILD_DIR, build/ by default); --models: a model repository to serve instead of
the generated one (it must serve myops::scale_shift, the model myops-loadtest calls).
The generated model's configuration is the peer's (bench/peers/triton_scale_shift/
config.pbtxt) naming the backend, or for the myops backend (libtriton_myops.so) the two
lines a user writes for it, the backend and the op, the backend completing the rest
from the op's schema; either with one CPU instance per core.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import signal
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "python"))

from myops_testing.paths import BUILD  # noqa: E402
from myops_testing.triton import TRITONSERVER, TritonError, TritonProcess, backend_directory  # noqa: E402

MODEL = "myops::scale_shift"
CONFIG = REPO / "bench" / "peers" / "triton_scale_shift" / "config.pbtxt"
# The myops backend's model: the backend and the op; inputs (x FP32 [-1], alpha and beta
# optional FP64 [1]) and output__0 come from the op's schema.
MYOPS_CONFIG = f"""backend: "myops"
parameters {{ key: "op" value {{ string_value: "{MODEL}" }} }}
"""


def backend_name(folder: pathlib.Path) -> str:
    libraries = sorted(folder.glob("libtriton_*.so"))
    if len(libraries) != 1:
        sys.exit(f"triton_serve.py: --backend {folder} must hold one libtriton_<name>.so, "
                 f"found {[p.name for p in libraries]}")
    return libraries[0].name.removeprefix("libtriton_").removesuffix(".so")


def write_repository(root: pathlib.Path, backend: str, instances: int) -> pathlib.Path:
    model = root / MODEL
    (model / "1").mkdir(parents=True)
    if backend == "myops":
        config = MYOPS_CONFIG
    else:
        config = CONFIG.read_text().replace('backend: "scaleshift"', f'backend: "{backend}"')
    config += f"instance_group [ {{ kind: KIND_CPU count: {instances} }} ]\n"
    (model / "config.pbtxt").write_text(config)
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=pathlib.Path, required=True,
                        help="an empty folder for the repository, the backend folder and the log")
    parser.add_argument("--backend", type=pathlib.Path,
                        default=BUILD / "bench" / "peers" / "triton_scale_shift")
    parser.add_argument("--models", type=pathlib.Path, help="serve this model repository")
    parser.add_argument("--instances", type=int, default=os.cpu_count() or 1,
                        help="CPU instances of the generated model (default: one per core)")
    parser.add_argument("--preload", default="", help="LD_PRELOAD for tritonserver (an allocator)")
    args = parser.parse_args()
    if TRITONSERVER is None:
        sys.exit("triton_serve.py: tritonserver not found: install nvidia-pytriton "
                 "(scripts/bootstrap.sh)")
    name = backend_name(args.backend.resolve())
    args.work.mkdir(parents=True, exist_ok=True)
    models = args.models or write_repository(args.work / "models", name, args.instances)
    backends = backend_directory(args.work, {name: args.backend})
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    signal.signal(signal.SIGINT, lambda *_: stop.append(True))
    env = {"LD_PRELOAD": args.preload} if args.preload else {}
    triton = TritonProcess(models, backends, env=env, log_path=args.work / "tritonserver.log")
    try:
        triton.start()
    except TritonError as e:
        print(e, flush=True)
        return 1
    print(f"triton pid {triton.pid}\nlistening on {triton.grpc_url}", flush=True)
    while not stop and triton.process is not None and triton.process.poll() is None:
        time.sleep(0.2)
    code = triton.stop()
    if not stop:
        print(f"tritonserver exited by itself ({code}); its log ends:\n" + triton.log()[-4000:],
              flush=True)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
