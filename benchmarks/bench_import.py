"""Import time of a model file (issue 26 target: a config.json or an ONNX file under 1 s).

Times, per file: the import alone in this process (`from_hf_config` / `from_onnx`, the median of 5 fresh reads with
the cache bypassed), its operator list (`workloads.operators`, what the first estimate builds), and the whole
`python -m jupyter_hwsim import FILE` in a fresh process (interpreter start and package import included). Files: every
packaged Hugging Face config (jupyter_hwsim/data/models/) and a generated ONNX encoder of 12 transformer layers
(hidden 256, ~250 nodes, 9.4M weights) written with onnx.helper. Figures only, no thresholds.

    python benchmarks/bench_import.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from jupyter_hwsim import HwsimError
from jupyter_hwsim.core import workloads
from jupyter_hwsim.core.importers import from_hf_config, from_onnx

MODELS = Path(__file__).resolve().parents[1] / "jupyter_hwsim" / "data" / "models"


def onnx_encoder(path: Path, layers: int = 12, hidden: int = 256, seq: int = 128) -> Path:
    """A BERT-like encoder: per layer q/k/v/out projections, scores, softmax, context, two layer norms, a GELU FFN."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits, nodes = [], []

    def w(name, *shape):
        inits.append(numpy_helper.from_array(np.zeros(shape, np.float32), name))
        return name

    x = "x"
    for i in range(layers):
        p = f"l{i}."
        q, k, v = (f"{p}{n}" for n in "qkv")
        for n in (q, k, v):
            nodes.append(helper.make_node("MatMul", [x, w(n + ".w", hidden, hidden)], [n], name=n))
        nodes += [
            helper.make_node("Transpose", [k], [p + "kt"], name=p + "kt", perm=[0, 2, 1]),
            helper.make_node("MatMul", [q, p + "kt"], [p + "s"], name=p + "scores"),
            helper.make_node("Softmax", [p + "s"], [p + "a"], name=p + "softmax", axis=-1),
            helper.make_node("MatMul", [p + "a", v], [p + "c"], name=p + "context"),
            helper.make_node("MatMul", [p + "c", w(p + "o.w", hidden, hidden)], [p + "o"], name=p + "out"),
            helper.make_node("Add", [p + "o", x], [p + "r1"], name=p + "add1"),
            helper.make_node(
                "LayerNormalization", [p + "r1", w(p + "g1", hidden), w(p + "b1", hidden)], [p + "n1"], name=p + "ln1"
            ),
            helper.make_node("MatMul", [p + "n1", w(p + "f1.w", hidden, 4 * hidden)], [p + "f1"], name=p + "ffn1"),
            helper.make_node("Gelu", [p + "f1"], [p + "g"], name=p + "gelu"),
            helper.make_node("MatMul", [p + "g", w(p + "f2.w", 4 * hidden, hidden)], [p + "f2"], name=p + "ffn2"),
            helper.make_node("Add", [p + "f2", p + "n1"], [p + "r2"], name=p + "add2"),
            helper.make_node(
                "LayerNormalization", [p + "r2", w(p + "g2", hidden), w(p + "b2", hidden)], [p + "out"], name=p + "ln2"
            ),
        ]
        x = p + "out"
    g = helper.make_graph(
        nodes,
        "encoder",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", seq, hidden])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", seq, hidden])],
        inits,
    )
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)]), path)
    return path


def median_s(fn, n: int = 5) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def fresh_process_s(path: Path, prefix: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "jupyter_hwsim", "import", f"{prefix}:{path}"], check=True, capture_output=True
    )
    return time.perf_counter() - t0


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        files = [("hf", p) for p in sorted(MODELS.glob("*.json"))]
        files.append(("onnx", onnx_encoder(Path(tmp) / "encoder-12x256.onnx")))
        print(f"{'file':<28} {'import ms':>10} {'operators ms':>13} {'fresh process s':>16}")
        for prefix, path in files:
            read = from_hf_config if prefix == "hf" else from_onnx
            try:
                w = read(path)
            except HwsimError as e:  # a packaged config the importer does not read (models/README.md says which)
                print(f"{path.name:<28} refused: {e}")
                continue
            imp = median_s(lambda read=read, path=path: read(path))
            ops = median_s(lambda w=w: workloads.operators(dict(w), 1))
            cold = fresh_process_s(path, prefix)
            print(f"{path.name:<28} {imp * 1e3:>10.1f} {ops * 1e3:>13.1f} {cold:>16.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
