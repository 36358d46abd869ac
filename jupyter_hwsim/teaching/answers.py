"""The instructor's answer key, computed from the current model: `python -m jupyter_hwsim.teaching.answers`.

Nothing here is typed: each answer is what the checkers accept today, so the key follows the model."""

from __future__ import annotations

from ..api import best_batch, simulate
from . import exercises as ex
from . import quiz


def _best_single_change(s) -> str:
    r = simulate(s)
    best = next((x for x in r.suggestions if "parts" not in x and x.get("speedup")), None)
    return f"{best['change']} ({best['speedup']:.2f}x)" if best else "none found"


def exercise_answers() -> dict[str, str]:
    """{exercise: its expected answer, in words}."""
    out = {}
    out["1 biggest change"] = _best_single_change(ex.LESSON1_PIPELINE)
    r = simulate(ex.LESSON2_DECODE, suggest=False)
    out["2 MFU"] = f"{r.utilization['gpu_mfu']:.4f}"
    res = best_batch(ex.LESSON3_INFERENCE, latency_slo_ms=ex.LESSON3_SLO_MS)
    out["3A best batch"] = f"batch_size={res['batch']}, {res['throughput']:,.0f} {res['throughput_unit']}"
    best, accepted = ex.serving_answer()
    served = ex.serving_table()[best].throughput
    out["3B server"] = f"max_batch_size={best} (accepted: {sorted(accepted)}), {served:,.0f} requests/s"
    a, c = simulate(ex.LESSON4_A100, suggest=False), simulate(ex.LESSON4_CPU, suggest=False)
    out["4 A100 over CPU"] = f"{a.throughput / c.throughput:.2f}x"
    r = simulate(ex.LESSON5_DECODE, suggest=False)
    out["5 model GB"] = f"{r.memory['weights_gb']:.2f} GB"
    out["5 tokens/s"] = f"{r.tokens_per_s_per_stream:.1f}"
    from ..core.precision import WARN_ABOVE, matmul_error

    res6 = {p: simulate(ex.LESSON6_T4.replace(precision=p), suggest=False).throughput for p in ex.FLOAT_FORMATS}
    safe = {p: x for p, x in res6.items() if matmul_error(p) <= WARN_ABOVE}
    top = max(safe.values())
    out["6 precision"] = ", ".join(p for p, x in safe.items() if x >= 0.98 * top)
    for b in (1, 256):
        s = ex.LESSON7_BASE.replace(batch_size=b)
        sp = simulate(s.replace(fusion="tensorrt"), suggest=False).throughput / simulate(s, suggest=False).throughput
        out[f"7 TensorRT speed-up, batch {b}"] = f"{sp:.2f}x"
    out["8 mystery(0)"] = _best_single_change(ex.mystery(0))
    for case, s in ex.CAPSTONE.items():
        out[f"10 capstone {case}"] = f"{simulate(s, suggest=False).bottleneck}; {_best_single_change(s)}"
    return out


def quiz_answers() -> dict[str, str]:
    """{question id: the accepted answer(s)}."""
    out = {}
    for qid, q in quiz.questions().items():
        right = quiz.correct_answers(qid)
        out[qid] = f"{right:.4g} (within {q.tolerance:.0%})" if q.numeric else " or ".join(right)
    return out


def main() -> None:
    print("Exercises")
    for k, v in exercise_answers().items():
        print(f"  {k:32} {v}")
    print("Predictions and quizzes")
    for k, v in quiz_answers().items():
        print(f"  {k:32} {v}")


if __name__ == "__main__":
    main()
