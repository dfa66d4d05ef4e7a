"""The leave-one-trace-out table (docs/predictors.md, the training run's evaluation.md, the evaluate CLI)."""
from __future__ import annotations

from typing import Any

BASELINE_ORDER = ("last-value", "seasonal-naive", "paper-ols-extrapolated", "paper-ols-literal")


def _order(names: list[str]) -> list[str]:
    return [n for n in BASELINE_ORDER if n in names] + sorted(n for n in names if n not in BASELINE_ORDER)


def evaluation_markdown(result: dict[str, Any], series: str | None = None) -> str:
    """The leave-one-trace-out table; with `series` (the evaluate CLI), the table for that one user's series, which
    is not called a held-out trace the model was trained beside."""
    per_group, summary = result["per_group"], result["summary"]
    scored_on = ("Per held-out trace (the model was trained on the others)" if series is None
                 else f"On {series} (not among the model's training traces unless its dataset declared it)")
    lines = [f"{scored_on}: MAE in events per second of that {'trace' if series is None else 'series'}; "
             "ratios to the naive last value and to the paper's OLS (extrapolated) on the same windows; "
             "under-prediction rate.", "",
             f"| {'held out' if series is None else 'series'} | predictor | windows | MAE (ev/s) | MAE ÷ naive "
             "| MAE ÷ paper OLS | under-prediction |",
             "|---|---|---|---|---|---|---|"]
    for g, per in per_group.items():
        for n in _order(list(per)):
            e = per[n]
            lines.append(f"| {g} | {n} | {e['windows']:.0f} | {e['mae']:.3g} | {e['mae_vs_naive']:.3f} | "
                         f"{e['mae_vs_paper']:.3f} | {e['under_rate']:.1%} |")
    over = (f"Summary over {len(per_group)} held-out groups (each counts once):" if series is None
            else f"Summary over {len(per_group)} series:")
    lines += ["", over, "",
              "| predictor | mean MAE ÷ naive | worst MAE ÷ naive | mean MAE ÷ paper OLS | mean under-prediction |",
              "|---|---|---|---|---|"]
    for n in _order(list(summary)):
        s = summary[n]
        mark = " (selected)" if n == result.get("best") else ""
        lines.append(f"| {n}{mark} | {s['mae_vs_naive']:.3f} | {s['worst_vs_naive']:.3f} | {s['mae_vs_paper']:.3f} "
                     f"| {s['under_rate']:.1%} |")
    return "\n".join(lines) + "\n"


def goals_markdown(result: dict[str, Any]) -> str:
    """The issue's goals against the measured summary, met or not (a missed goal is published, never lowered)."""
    s = result["summary"]
    best, conf = s[result["best"]], s[result["conformal"]]
    rows = [("champion mean MAE ≤ 0.6× naive", f"{best['mae_vs_naive']:.3f}x", best["mae_vs_naive"] <= 0.6),
            ("champion mean MAE ≤ 0.45× the paper's OLS", f"{best['mae_vs_paper']:.3f}x", best["mae_vs_paper"] <= 0.45),
            ("champion ≤ 1.0× naive on every held-out trace", f"worst {best['worst_vs_naive']:.3f}x",
             best["worst_vs_naive"] <= 1.0),
            ("conservative variant: under-prediction ≤ 20 %", f"{conf['under_rate']:.1%}", conf["under_rate"] <= 0.2),
            ("conservative variant: MAE ≤ 1.5× the champion's", f"{conf['mae_vs_naive'] / best['mae_vs_naive']:.2f}x",
             conf["mae_vs_naive"] <= 1.5 * best["mae_vs_naive"])]
    lines = ["| goal | measured | met |", "|---|---|---|"]
    lines += [f"| {g} | {m} | {'yes' if ok else '**no**'} |" for g, m, ok in rows]
    guarded = f"{result['best']}+guard"
    if guarded in s:
        g = s[guarded]
        shares = [per[guarded].get("naive_share", float("nan")) for per in result["per_group"].values()
                  if guarded in per]
        lines += ["", f"The goals are the model's. As a controller runs it, through the runtime guard that answers "
                      f"with the last value while the model has lately done worse (`{guarded}`, replayed on each "
                      f"held-out trace): mean MAE {g['mae_vs_naive']:.3f}x naive, worst {g['worst_vs_naive']:.3f}x, "
                      f"{g['mae_vs_paper']:.3f}x the paper's OLS; the guard answered naively on "
                      f"{sum(shares) / len(shares):.0%} of the windows on average."]
    return "\n".join(lines) + "\n"
