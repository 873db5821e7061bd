#!/usr/bin/env python3
"""The recent-hours variant of the AQI model: a forecast from the station's last hours of readings.

Input: the work directory written by prepare.ts (rows.csv, meta.json) and prepare-history.ts (history.f32,
history-rows.csv, history-requests.json, history-meta.json): every row's features were computed by the
Worker's TypeScript (src/domain/history.ts) from request-shaped readings.

The point is the "window arithmetic" (the predicted hour's 24-hour and 8-hour windows with their measured
hours kept and their unknown newest hours filled with the mean of the newest three readings) corrected by a
learned residual in log space:  z = log1p(aqi) - log1p(window_arithmetic_aqi), one gradient-boosted model over
every horizon (the horizon is an input). The 80% interval is z + the 0.1 / 0.9 quantile of the forward
residuals of the horizon band (calibrated per band). The service computes
aqi = expm1(log1p(window_arithmetic_aqi) + z) (aqiFromWindowArithmeticZ).

Output, in --models-dir:
  aqi-history-<version>.onnx           input `input` float32 [N, 74]; outputs `z`, `dz_low`, `dz_high` float32 [N, 1]
  aqi-history-<version>.json / .md     model card: rolling-origin evaluation on the frozen test months
                                       (history-evaluation.json) per horizon and season against persistence,
                                       the window arithmetic and the recent-reading model
  aqi-history-<version>-mae-by-horizon.svg
  aqi-history-<version>.holdout.json   request rows (with recent_hours), their features, this trainer's predictions

Modes: --select runs only the selection of settings on the selection months and prints it.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import hashlib
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import sklearn
from onnx import TensorProto, helper
from sklearn.ensemble import HistGradientBoostingRegressor

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from fit import (  # noqa: E402
    Dataset, coverage, evaluate_onnx_independently, metrics, tree_ensemble_node, float32_at_most,
)
from forecast import Lags, ReadingModel, reading_matrix, month_start, next_month, table  # noqa: E402

HERE = Path(__file__).resolve().parent
FROZEN = json.loads((HERE / "history-evaluation.json").read_text(encoding="utf-8"))
TEST_MONTHS = FROZEN["testMonths"]
HORIZONS = FROZEN["horizonsHours"]
SELECTION_MONTHS = FROZEN["selectionMonths"]
BANDS = [tuple(band) for band in FROZEN["horizonBandsHours"]]
SEASONS = ("Winter", "Summer", "Monsoon", "Post-Monsoon")
QUANTILE_LOW, QUANTILE_HIGH = 0.1, 0.9
CALIBRATION_HOURS = 3000  # per origin: the point refitted before the latest 3,000 station-hours, residuals measured on them
HOLDOUT_ROWS = 150
BASE = dict(loss="absolute_error", learning_rate=0.1, l2_regularization=1.0, early_stopping=False)
# Per horizon band: one of these models of z (or none), times a shrinkage (0 = the window arithmetic itself);
# both chosen per band on the selection months (history-evaluation.json) only.
CANDIDATES = {
    "small": dict(max_iter=30, max_depth=3, max_leaf_nodes=8, min_samples_leaf=200),
    "medium": dict(max_iter=100, max_leaf_nodes=15, min_samples_leaf=200),
}
SHRINKAGE = [0.0, 0.25, 0.5, 0.75, 1.0]
# The first design, one model over every horizon (sizes up to 400 trees of 31 leaves), lost to the window
# arithmetic at 1-3 h on the selection months (1.85x its MAE at 1 h and more): the large residuals of long
# horizons set its leaves, so short horizons got noise. Kept in the card (FIRST_DESIGN_SELECTION).
FIRST_DESIGN_SELECTION = HERE / "history-first-design-selection.json"


def progress(done: int, total: int, message: str) -> None:
    print(f"PROGRESS {done}/{total} {message}", flush=True)


def band_of(horizon) -> np.ndarray:
    return np.searchsorted(np.array([high for _, high in BANDS[:-1]], dtype=np.float64), horizon, side="left")


class History:
    def __init__(self, work_dir: Path, data: Dataset):
        self.meta = json.loads((work_dir / "history-meta.json").read_text(encoding="utf-8"))
        self.names = self.meta["featureNames"]
        if self.names[:len(data.feature_names)] != data.feature_names:
            raise SystemExit("history.f32 does not start with the weather-only columns")
        raw = np.fromfile(work_dir / "history.f32", dtype=np.float32)
        self.X = raw.reshape(-1, len(self.names)).astype(np.float64)
        with open(work_dir / "history-rows.csv", newline="", encoding="utf-8") as handle:
            records = list(csv.DictReader(handle))
        self.row = np.array([int(r["data_row"]) for r in records])
        self.horizon = np.array([int(r["horizon"]) for r in records])
        self.evaluation = np.array([r["evaluation"] == "1" for r in records])
        self.y = data.y[self.row]
        self.time_ms = data.time_ms[self.row]
        self.season = data.season[self.row]
        self.station = data.station[self.row]
        self.persistence = self.X[:, self.names.index("aqi_at_latest_reading")]
        self.wa = self.X[:, self.names.index("window_arithmetic_aqi")]
        self.z = np.log1p(self.y) - np.log1p(self.wa)
        self.requests_path = work_dir / "history-requests.json"
        HistoryModel.horizon_column = self.names.index("horizon_hours")

    def columns(self) -> list:
        return [i for i, name in enumerate(self.names) if name != "visibility_km"]


def month_rows(h: History, month: str):
    year, number = (int(part) for part in month.split("-"))
    start, end = month_start(year, number), month_start(*next_month(year, number))
    return start, (h.time_ms >= start) & (h.time_ms < end)


def from_z(z, wa):
    return np.expm1(np.log1p(wa) + z)


class HistoryModel:
    """z = shrinkage x (the band's model) for the horizon band of the row; 0 (the window arithmetic) where the
    selection kept no model."""

    def __init__(self, h: History, train: np.ndarray, choices: list, seed: int, calibration_cutoff=None):
        self.choices = choices
        self.columns = h.columns()
        self.models = self._fit(h, train, seed)
        self.offsets = None
        if calibration_cutoff is not None:
            before = train[h.time_ms[train] < calibration_cutoff]
            after = train[h.time_ms[train] >= calibration_cutoff]
            residual = h.z[after] - self._predict(self._fit(h, before, seed), h.X[after])
            self.offsets = band_quantiles(residual, h.horizon[after])

    def _fit(self, h: History, rows: np.ndarray, seed: int) -> list:
        bands = band_of(h.horizon[rows])
        models = []
        for b, choice in enumerate(self.choices):
            if choice["shrinkage"] == 0:
                models.append(None)
                continue
            band_rows = rows[bands == b]
            model = HistoryModel.fit_band(h, band_rows, choice["size"], seed)
            models.append((model, choice["shrinkage"]))
        return models

    @staticmethod
    def fit_band(h: History, rows: np.ndarray, size: str, seed: int):
        return HistGradientBoostingRegressor(random_state=seed, **BASE, **CANDIDATES[size]).fit(
            h.X[rows][:, h.columns()], h.z[rows])

    def _predict(self, models: list, X) -> np.ndarray:
        z = np.zeros(len(X))
        bands = band_of(X[:, self.horizon_column])
        for b, entry in enumerate(models):
            mask = bands == b
            if entry is not None and mask.any():
                model, shrinkage = entry
                z[mask] = shrinkage * model.predict(X[mask][:, self.columns])
        return z

    horizon_column = None  # set by History

    def raw(self, X) -> np.ndarray:
        return self._predict(self.models, X)

    def predict(self, X, horizon, wa):
        z = self.raw(X)
        bands = band_of(horizon)
        low = np.array([self.offsets[b][0] for b in bands])
        high = np.array([self.offsets[b][1] for b in bands])
        point = from_z(z, wa)
        return point, np.clip(from_z(z + low, wa), 0, 500), np.clip(from_z(z + high, wa), 0, 500)


def band_quantiles(residual, horizon) -> list:
    """Per horizon band: the 0.1 and 0.9 quantiles of the forward residuals in z (the interval's offsets)."""
    bands = band_of(horizon)
    out = []
    for b in range(len(BANDS)):
        r = residual[bands == b]
        if len(r) < 50:
            raise SystemExit(f"band {BANDS[b]} has only {len(r)} calibration residuals")
        out.append((float(np.quantile(r, QUANTILE_LOW)), float(np.quantile(r, QUANTILE_HIGH))))
    return out


def mae(y, p) -> float:
    return float(np.mean(np.abs(y - p)))


# ---------------------------------------------------------------- selection (months before the test months)


def select_settings(h: History, seed: int, step) -> dict:
    """Per horizon band: the model size and shrinkage with the lowest MAE on the band's evaluation horizon,
    pooled over the selection months (each trained on every hour before it); shrinkage 0 (the window
    arithmetic) unless a candidate is strictly better."""
    errors = {}  # (band, size, shrinkage) -> list of absolute errors
    baseline = {b: [] for b in range(len(BANDS))}
    for month in SELECTION_MONTHS:
        start, in_month = month_rows(h, month)
        train = np.flatnonzero(h.time_ms < start)
        step(f"selection month {month}: train {len(train)} rows")
        train_bands = band_of(h.horizon[train])
        for b in range(len(BANDS)):
            test = np.flatnonzero(in_month & h.evaluation & np.isin(h.horizon, HORIZONS) & (band_of(h.horizon) == b))
            baseline[b].append(np.abs(h.y[test] - h.wa[test]))
            for size in CANDIDATES:
                model = HistoryModel.fit_band(h, train[train_bands == b], size, seed)
                z = model.predict(h.X[test][:, h.columns()])
                for shrinkage in SHRINKAGE[1:]:
                    errors.setdefault((b, size, shrinkage), []).append(np.abs(h.y[test] - from_z(shrinkage * z, h.wa[test])))
    choices, table_rows = [], {}
    for b, band in enumerate(BANDS):
        base = float(np.mean(np.concatenate(baseline[b])))
        best = (base, None, 0.0)
        for size in CANDIDATES:
            for shrinkage in SHRINKAGE[1:]:
                error = float(np.mean(np.concatenate(errors[(b, size, shrinkage)])))
                table_rows[f"{band[0]}-{band[1]} h, {size}, shrinkage {shrinkage}"] = round(error / base, 4)
                if error < best[0] - 1e-9:
                    best = (error, size, shrinkage)
        choices.append({"hours": list(band), "size": best[1], "shrinkage": best[2],
                        "ratioToWindowArithmetic": round(best[0] / base, 4)})
    return {"months": SELECTION_MONTHS, "ratioToWindowArithmetic": table_rows, "chosen": choices,
            "criterion": "per horizon band, the MAE on the band's evaluation horizon pooled over the selection "
                         "months (each trained on every hour before it), relative to the window arithmetic; "
                         "shrinkage 0 (the window arithmetic itself) unless a candidate is strictly better"}


# ---------------------------------------------------------------- rolling origin on the frozen test months


def evaluate_rolling_origin(data: Dataset, h: History, lags: Lags, settings: dict, seed: int, step) -> dict:
    keys = ("y", "point", "low", "high", "persist", "wa", "reading", "horizon", "season", "station", "origin",
            "residual")
    collected = {k: [] for k in keys}
    per_origin = []
    timings = {"historySeconds": 0.0, "readingSeconds": 0.0}
    for number, month in enumerate(TEST_MONTHS, start=1):
        start, in_month = month_rows(h, month)
        train = np.flatnonzero(h.time_ms < start)
        test = np.flatnonzero(in_month & h.evaluation & np.isin(h.horizon, HORIZONS))
        step(f"rolling origin {month}: train {len(train)} rows, test {len(test)} rows")
        cutoff = np.sort(np.unique(data.time_ms[data.time_ms < start]))[-CALIBRATION_HOURS // 2]
        started = time.time()
        model = HistoryModel(h, train, settings, seed, cutoff)
        point, low, high = model.predict(h.X[test], h.horizon[test], h.wa[test])
        timings["historySeconds"] += time.time() - started

        # The recent-reading model, refitted on the hours before the month, given the AQI at the newest reading
        # (the same number the service computes) and its age.
        started = time.time()
        data_train = np.flatnonzero(data.time_ms < start)
        data_cutoff = np.sort(data.time_ms[data_train])[-3000]
        reading = ReadingModel(data, lags, data_train, seed, seed + number, data_cutoff)
        rows, ages, recent = h.row[test], h.horizon[test].astype(np.float64), h.persistence[test]
        reading_point, _, _ = reading.predict(reading_matrix(data, rows, ages, recent), recent, ages)
        timings["readingSeconds"] += time.time() - started

        for key, values in (("y", h.y[test]), ("point", point), ("low", low), ("high", high),
                            ("persist", h.persistence[test]), ("wa", h.wa[test]), ("reading", reading_point),
                            ("horizon", h.horizon[test]), ("season", h.season[test]),
                            ("station", h.station[test]), ("origin", np.full(len(test), number)),
                            ("residual", h.z[test] - model.raw(h.X[test]))):
            collected[key].append(values)
        per_origin.append({
            "testMonth": month, "trainRows": int(len(train)), "testRows": int(len(test)),
            "mae": round(mae(h.y[test], point), 2), "persistenceMae": round(mae(h.y[test], h.persistence[test]), 2),
            "windowArithmeticMae": round(mae(h.y[test], h.wa[test]), 2),
            "readingModelMae": round(mae(h.y[test], reading_point), 2),
            "coverage": coverage(h.y[test], low, high),
            "intervalOffsetsZ": [[round(a, 4), round(b, 4)] for a, b in model.offsets],
        })
    r = {k: np.concatenate(v) for k, v in collected.items()}

    def block(mask):
        y = r["y"][mask]
        out = {
            "model": metrics(data, y, r["point"][mask]),
            "persistence": metrics(data, y, r["persist"][mask]),
            "windowArithmetic": metrics(data, y, r["wa"][mask]),
            "readingModel": metrics(data, y, r["reading"][mask]),
            "interval": {"coverage": coverage(y, r["low"][mask], r["high"][mask]),
                         "meanWidth": round(float(np.mean(r["high"][mask] - r["low"][mask])), 1)},
        }
        out["ratioToPersistence"] = round(mae(y, r["point"][mask]) / mae(y, r["persist"][mask]), 3)
        out["ratioToWindowArithmetic"] = round(mae(y, r["point"][mask]) / mae(y, r["wa"][mask]), 3)
        months = np.unique(r["origin"][mask])
        out["originsBetterThanPersistence"] = int(sum(
            mae(y[r["origin"][mask] == o], r["point"][mask][r["origin"][mask] == o])
            < mae(y[r["origin"][mask] == o], r["persist"][mask][r["origin"][mask] == o]) for o in months))
        out["origins"] = int(len(months))
        return out

    every = np.ones(len(r["y"]), dtype=bool)
    return {
        "design": (f"rolling origin on the test months frozen in workers/aqi/training/history-evaluation.json "
                   f"({TEST_MONTHS[0]} .. {TEST_MONTHS[-1]}, {len(TEST_MONTHS)} months): for each, train on every "
                   f"hour before the month and test on every station-hour of the month at horizons {HORIZONS} h "
                   "whose newest reading exists and has a CPCB AQI; the interval's per-band offsets come from "
                   f"the residuals on the latest {CALIBRATION_HOURS // 2} hours before the month of a model "
                   "fitted on the hours before them. Persistence is the AQI at the newest reading; the window "
                   "arithmetic the AQI of the predicted hour's windows with the measured hours kept and the "
                   "unknown newest hours filled with the mean of the newest three readings (from 24 h on: "
                   "persistence); the recent-reading model (aqi-reading configuration) is refitted at each "
                   "origin and given the AQI at the newest reading and its age; all on the same rows"),
        "origins": len(per_origin),
        "perOrigin": per_origin,
        "all": block(every),
        "perHorizon": {str(x): block(r["horizon"] == x) for x in HORIZONS},
        "perSeason": {s: block(r["season"] == s) for s in SEASONS if np.any(r["season"] == s)},
        "perHorizonAndSeason": {f"{x} h {s}": block((r["horizon"] == x) & (r["season"] == s))
                                for x in HORIZONS for s in SEASONS if np.any((r["horizon"] == x) & (r["season"] == s))},
        "perStation": {str(s): block(r["station"] == s) for s in np.unique(r["station"])},
        "timings": {k: round(v, 1) for k, v in timings.items()},
        "_r": r,
    }


# ---------------------------------------------------------------- ONNX


def band_tree_node(h: History, offsets: list, side: int, name: str):
    """One tree on the horizon column: a binary search over the bands, the band's offset (in z) at the leaf."""
    horizon_column = h.names.index("horizon_hours")
    attrs = {k: [] for k in ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_values", "nodes_modes",
                             "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true",
                             "target_treeids", "target_nodeids", "target_ids", "target_weights")}
    next_id = [0]

    def add(mode, feature=0, value=0.0):
        node_id = next_id[0]
        next_id[0] += 1
        for key, v in (("nodes_treeids", 0), ("nodes_nodeids", node_id), ("nodes_featureids", feature),
                       ("nodes_values", value), ("nodes_modes", mode), ("nodes_truenodeids", 0),
                       ("nodes_falsenodeids", 0), ("nodes_missing_value_tracks_true", 0)):
            attrs[key].append(v)
        return node_id, len(attrs["nodes_nodeids"]) - 1

    def build(first, last):
        if first == last:
            node_id, _ = add("LEAF")
            attrs["target_treeids"].append(0); attrs["target_nodeids"].append(node_id)
            attrs["target_ids"].append(0); attrs["target_weights"].append(float(offsets[first][side]))
            return node_id
        middle = (first + last) // 2
        node_id, position = add("BRANCH_LEQ", horizon_column, float32_at_most(float(BANDS[middle][1])))
        attrs["nodes_truenodeids"][position] = build(first, middle)
        attrs["nodes_falsenodeids"][position] = build(middle + 1, last)
        return node_id

    build(0, len(BANDS) - 1)
    return helper.make_node("TreeEnsembleRegressor", ["input"], [name], domain="ai.onnx.ml", name=name, n_targets=1,
                            aggregate_function="SUM", post_transform="NONE", base_values=[0.0], **attrs)


def banded_node(h: History, model: HistoryModel):
    """One TreeEnsembleRegressor for the band models: tree k holds the k-th tree of every band behind a binary
    search on horizon_hours (so a row walks max-trees trees, not one per band and tree); a band that kept the
    window arithmetic, or has fewer trees, is a leaf 0 there. Leaves carry the band's shrinkage (and its
    baseline in tree 0). NaN inputs follow sklearn's routing (missing-value tracks)."""
    horizon_column = h.names.index("horizon_hours")
    attrs = {k: [] for k in ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_values", "nodes_modes",
                             "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true",
                             "target_treeids", "target_nodeids", "target_ids", "target_weights")}
    fitted = [entry for entry in model.models if entry is not None]
    iterations = max((len(entry[0]._predictors) for entry in fitted), default=1)
    node_total = 0

    def add(tree, node_id, mode, feature=0, value=0.0, true_id=0, false_id=0, missing=0):
        for key, v in (("nodes_treeids", tree), ("nodes_nodeids", node_id), ("nodes_featureids", int(feature)),
                       ("nodes_values", value), ("nodes_modes", mode), ("nodes_truenodeids", true_id),
                       ("nodes_falsenodeids", false_id), ("nodes_missing_value_tracks_true", missing)):
            attrs[key].append(v)
        return len(attrs["nodes_nodeids"]) - 1

    def leaf(tree, node_id, weight):
        add(tree, node_id, "LEAF")
        attrs["target_treeids"].append(tree); attrs["target_nodeids"].append(node_id)
        attrs["target_ids"].append(0); attrs["target_weights"].append(float(weight))

    for k in range(iterations):
        next_id = [0]

        def band_subtree(b):
            entry = model.models[b]
            root = next_id[0]
            if entry is None or k >= len(entry[0]._predictors):
                next_id[0] += 1
                leaf(k, root, 0.0)
                return root
            estimator, shrinkage = entry
            baseline = float(np.ravel(estimator._baseline_prediction)[0]) if k == 0 else 0.0
            nodes = estimator._predictors[k][0].nodes
            next_id[0] += len(nodes)
            for node_id, node in enumerate(nodes):
                if node["is_leaf"]:
                    leaf(k, root + node_id, shrinkage * (float(node["value"]) + baseline))
                else:
                    add(k, root + node_id, "BRANCH_LEQ", model.columns[int(node["feature_idx"])],
                        float32_at_most(float(node["num_threshold"])), root + int(node["left"]),
                        root + int(node["right"]), int(node["missing_go_to_left"]))
            return root

        def route(first, last):
            if first == last:
                return band_subtree(first)
            middle = (first + last) // 2
            root = next_id[0]
            next_id[0] += 1
            position = add(k, root, "BRANCH_LEQ", horizon_column, float32_at_most(float(BANDS[middle][1])))
            attrs["nodes_truenodeids"][position] = route(first, middle)
            attrs["nodes_falsenodeids"][position] = route(middle + 1, last)
            return root

        route(0, len(BANDS) - 1)
        node_total += next_id[0]
    node = helper.make_node("TreeEnsembleRegressor", ["input"], ["z"], domain="ai.onnx.ml", name="z", n_targets=1,
                            aggregate_function="SUM", post_transform="NONE", base_values=[0.0], **attrs)
    return node, iterations, node_total


def history_graph(h: History, model: HistoryModel, version: str, description: str):
    point, trees, node_count = banded_node(h, model)
    nodes = [point, band_tree_node(h, model.offsets, 0, "dz_low"), band_tree_node(h, model.offsets, 1, "dz_high")]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 1]) for n in ("z", "dz_low", "dz_high")]
    graph = helper.make_graph(nodes, f"aqi_history_{version}",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", len(h.names)])], outputs)
    proto = helper.make_model(graph, producer_name="workers/aqi/training/history.py", producer_version=version,
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    proto.ir_version = 8
    proto.model_version = 1
    proto.doc_string = description
    onnx.checker.check_model(proto, full_check=True)
    return proto, {"z": {"trees": trees, "nodes": node_count}, "dz_low": {"trees": 1, "nodes": 2 * len(BANDS) - 1},
                   "dz_high": {"trees": 1, "nodes": 2 * len(BANDS) - 1}}


def expected_outputs(h: History, model: HistoryModel, X) -> dict:
    """The trainer's predictions as the service computes them (before rounding and clipping)."""
    wa = X[:, h.names.index("window_arithmetic_aqi")]
    z = model.raw(X)
    bands = band_of(X[:, h.names.index("horizon_hours")])
    low = np.array([model.offsets[b][0] for b in bands])
    high = np.array([model.offsets[b][1] for b in bands])
    return {"aqi": from_z(z, wa), "aqi_low": from_z(z + low, wa), "aqi_high": from_z(z + high, wa)}


def holdout(h: History, model: HistoryModel, seed: int):
    candidates = json.loads(h.requests_path.read_text(encoding="utf-8"))
    complete = [c for c in candidates if all(c["request"][k] is not None for k in ("temperature", "humidity", "wind_speed"))]
    rng = np.random.RandomState(seed)
    chosen = sorted(rng.choice(len(complete), size=min(HOLDOUT_ROWS, len(complete)), replace=False).tolist())
    rows = [complete[i] for i in chosen]
    X = h.X[[c["featureRow"] for c in rows]]
    expected = expected_outputs(h, model, X)
    out = []
    for k, c in enumerate(rows):
        request = dict(c["request"])
        request["visibility"] = 5.0
        out.append({"request": request, "features": [None if np.isnan(v) else float(np.float32(v)) for v in X[k]],
                    "expected": {n: float(v[k]) for n, v in expected.items()},
                    "actualAqi": float(h.y[c["featureRow"]])})
    return out, X.astype(np.float32), expected


# ---------------------------------------------------------------- plot and card


def svg_plot(path: Path, ro: dict) -> None:
    per = ro["perHorizon"]
    series = [("recent-hours model", "model", "#1f77b4"), ("persistence (AQI at the newest reading)", "persistence", "#d62728"),
              ("window arithmetic", "windowArithmetic", "#ff7f0e"), ("recent-reading model", "readingModel", "#2ca02c")]
    width, height, left, right, top, bottom = 760, 420, 70, 290, 40, 60
    top_value = math.ceil(max(per[str(x)][k]["mae"] for x in HORIZONS for _, k, _ in series) / 10) * 10
    px = lambda k: left + k * (width - left - right) / (len(HORIZONS) - 1)  # noqa: E731
    py = lambda v: top + (height - top - bottom) * (1 - v / top_value)  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           'font-family="sans-serif" font-size="12">', f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="22" font-size="14">MAE by horizon, rolling origin ({ro["origins"]} frozen test months, same rows)</text>']
    for v in range(0, top_value + 1, 10):
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{py(v):.1f}" y2="{py(v):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 8}" y="{py(v) + 4:.1f}" text-anchor="end">{v}</text>')
    for k, x in enumerate(HORIZONS):
        out.append(f'<text x="{px(k):.1f}" y="{height - bottom + 18}" text-anchor="middle">{x} h</text>')
    out.append(f'<text x="{(left + width - right) / 2}" y="{height - 15}" text-anchor="middle">horizon (hours from the '
               'newest reading to the predicted hour)</text>')
    out.append(f'<text x="18" y="{(top + height - bottom) / 2}" transform="rotate(-90 18 {(top + height - bottom) / 2})" '
               'text-anchor="middle">MAE (AQI)</text>')
    for n, (label, key, colour) in enumerate(series):
        points = " ".join(f"{px(k):.1f},{py(per[str(x)][key]['mae']):.1f}" for k, x in enumerate(HORIZONS))
        out.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for k, x in enumerate(HORIZONS):
            out.append(f'<circle cx="{px(k):.1f}" cy="{py(per[str(x)][key]["mae"]):.1f}" r="3" fill="{colour}"/>')
        y = top + 20 + 22 * n
        out.append(f'<line x1="{width - right + 15}" x2="{width - right + 40}" y1="{y}" y2="{y}" stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{width - right + 46}" y="{y + 4}">{label}</text>')
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def render_markdown(card: dict) -> str:
    ro = card["evaluation"]["rollingOrigin"]
    acc = card["evaluation"]["acceptance"]
    out = []
    add = out.append
    add(f"# Model card: {card['modelVersion']}")
    add("")
    add(f"Task: {card['task']}. Trained {card['trainedAt']} with seed {card['seed']}. The service answers with this "
        "model when a request carries `recent_hours`; with `recent_aqi` it uses the recent-reading model "
        f"([card]({card['readingModelCard']})), otherwise the weather-only model.")
    add("")
    add("## Rolling-origin evaluation (the headline)")
    add("")
    add(ro["design"] + ".")
    add("")
    add("MAE by horizon (same rows in each line; ratio = the model's MAE over persistence's and over the window "
        "arithmetic's):")
    add("")
    add(table(["horizon", "rows", "recent-hours model", "persistence", "window arithmetic", "recent-reading model",
               "ratio to persistence", "target", "ratio to window arithmetic", "months better than persistence",
               "coverage 80%", "mean width"],
              [[f"{x} h", ro["perHorizon"][str(x)]["model"]["n"], ro["perHorizon"][str(x)]["model"]["mae"],
                ro["perHorizon"][str(x)]["persistence"]["mae"], ro["perHorizon"][str(x)]["windowArithmetic"]["mae"],
                ro["perHorizon"][str(x)]["readingModel"]["mae"], ro["perHorizon"][str(x)]["ratioToPersistence"],
                acc["targetRatioToPersistence"][str(x)], ro["perHorizon"][str(x)]["ratioToWindowArithmetic"],
                f"{ro['perHorizon'][str(x)]['originsBetterThanPersistence']}/{ro['perHorizon'][str(x)]['origins']}",
                ro["perHorizon"][str(x)]["interval"]["coverage"], ro["perHorizon"][str(x)]["interval"]["meanWidth"]]
               for x in HORIZONS]))
    add("")
    add(f"![MAE by horizon]({card['files']['plot']})")
    add("")
    add("**Acceptance:** " + "; ".join(f"{k}: {'met' if v else 'NOT met'}" for k, v in acc["checks"].items()) + ".")
    add("")
    add("Per season (horizons pooled):")
    add("")
    add(table(["season", "rows", "MAE model", "MAE persistence", "MAE window arithmetic", "MAE recent-reading model",
               "ratio to persistence", "coverage", "mean width"],
              [[s, v["model"]["n"], v["model"]["mae"], v["persistence"]["mae"], v["windowArithmetic"]["mae"],
                v["readingModel"]["mae"], v["ratioToPersistence"], v["interval"]["coverage"], v["interval"]["meanWidth"]]
               for s, v in ro["perSeason"].items()]))
    add("")
    add("Per horizon and season (MAE):")
    add("")
    add(table(["horizon, season", "rows", "model", "persistence", "window arithmetic", "recent-reading model", "coverage"],
              [[k, v["model"]["n"], v["model"]["mae"], v["persistence"]["mae"], v["windowArithmetic"]["mae"],
                v["readingModel"]["mae"], v["interval"]["coverage"]] for k, v in ro["perHorizonAndSeason"].items()]))
    add("")
    add("Per test month (horizons pooled):")
    add("")
    add(table(["test month", "train rows", "test rows", "MAE model", "MAE persistence", "MAE window arithmetic",
               "MAE recent-reading model", "coverage"],
              [[o["testMonth"], o["trainRows"], o["testRows"], o["mae"], o["persistenceMae"], o["windowArithmeticMae"],
                o["readingModelMae"], o["coverage"]] for o in ro["perOrigin"]]))
    add("")
    add(f"Run time of the evaluation on this 2-core machine: recent-hours fits {ro['timings']['historySeconds']} s, "
        f"recent-reading refits {ro['timings']['readingSeconds']} s.")
    add("")
    add("## Which months chose what")
    add("")
    sel = card["model"]["selection"]
    add(f"- Frozen in `workers/aqi/training/history-evaluation.json` (committed before the first fit): the test months, "
        f"the horizons {HORIZONS} h, the horizon bands {[list(b) for b in BANDS]} and the selection months "
        f"{sel['months']}.")
    add(f"- Per horizon band, the model (size {list(CANDIDATES)}, or none) and its shrinkage {SHRINKAGE} were chosen on "
        f"the selection months only; criterion: {sel['criterion']}. Chosen (MAE ratio to the window arithmetic on "
        "the selection months):")
    add("")
    add(table(["horizon band (h)", "model", "shrinkage", "ratio to window arithmetic"],
              [[f"{c['hours'][0]}-{c['hours'][1]}", c["size"] or "none (window arithmetic)", c["shrinkage"],
                c["ratioToWindowArithmetic"]] for c in sel["chosen"]]))
    add("")
    first = card["model"]["firstDesign"]
    add(f"- A first design, {first['design']}, was run on the same selection months first and rejected there: "
        "its best candidate's MAE was " + ", ".join(f"{x} h {v}x" for x, v in first["best"]["ratioByHorizon"].items())
        + " the window arithmetic's (the long horizons' large residuals set the leaves, so short horizons got "
        "noise). The per-band design above replaced it before any test month was fitted.")
    add("- Everything else (the residual of the window arithmetic in log space, the feature list, the candidates, "
        "per-band residual quantiles for the interval) was fixed before the first fit; the test months chose nothing.")
    add("")
    add("## Model and artifact")
    add("")
    m = card["model"]
    add(f"- Estimator: {m['estimator']}; target {m['target']}; params `{m['params']}`.")
    add("- Point: per horizon band " + "; ".join(
        f"{c['hours'][0]}-{c['hours'][1]} h: " + (f"{c['size']} x {c['shrinkage']}" if c["size"] else "window arithmetic")
        for c in m["bands"]) + ".")
    add(f"- Inputs: {m['inputs']}")
    add(f"- Training rows: {m['training']}")
    add(f"- Interval: {m['interval']['method']}")
    add("")
    add(table(["horizon band (h)", "offset low (z)", "offset high (z)"],
              [[f"{b[0]}-{b[1]}", round(o[0], 4), round(o[1], 4)] for b, o in zip(BANDS, m["interval"]["shippedOffsetsZ"])]))
    add("")
    art = card["artifact"]
    add(f"- File `{art['file']}` ({art['bytes']} bytes, sha256 `{art['sha256']}`): input `input` float32 "
        f"[N, {len(art['input']['layout'])}]; outputs `z`, `dz_low`, `dz_high` float32 [N, 1]. {art['graph']}")
    add(f"- Export verified: {art['verification']['method']}; max absolute difference "
        f"{art['verification']['maxAbsDifferenceAqi']:.2e} AQI. `{card['files']['holdout']}` holds {HOLDOUT_ROWS} "
        "request rows (with their recent_hours) and the trainer's features and predictions for the workerd "
        "model-match test.")
    add("")
    add("## Limits")
    add("")
    for line in card["limits"]:
        add(f"- {line}")
    add("")
    return "\n".join(out)


def season_limits(ro: dict) -> list:
    """What the per-season and per-month tables say against the headline, in words."""
    seasons = ro["perSeason"]
    coverage_by_season = {k: v["interval"]["coverage"] for k, v in seasons.items()}
    low = min(coverage_by_season, key=coverage_by_season.get)
    high = max(coverage_by_season, key=coverage_by_season.get)
    out = [f"The interval is calibrated per horizon band, not per season: pooled over the horizons its coverage runs "
           f"from {coverage_by_season[low]} ({low}) to {coverage_by_season[high]} ({high}), and per month from "
           f"{min(o['coverage'] for o in ro['perOrigin'])} to {max(o['coverage'] for o in ro['perOrigin'])}."]
    losing = [k for k, v in seasons.items() if v["ratioToPersistence"] >= 1]
    if losing:
        worst = max(ro["perOrigin"], key=lambda o: o["mae"] - o["persistenceMae"])
        out.append("Per season (horizons pooled) the model loses to persistence in " + ", ".join(
            f"{k} ({seasons[k]['model']['mae']} against {seasons[k]['persistence']['mae']})" for k in losing)
            + f"; the month that loses most is {worst['testMonth']} ({worst['mae']} against {worst['persistenceMae']}), "
            "when the pollution season set in; the selection months "
            "(summer and monsoon) held no such turn.")
    return out


def first_design() -> dict:
    recorded = json.loads(FIRST_DESIGN_SELECTION.read_text(encoding="utf-8"))
    best = recorded["candidates"][json.dumps(recorded["chosen"], sort_keys=True)]
    return {"design": recorded["design"], "months": recorded["months"], "best": best,
            "candidates": recorded["candidates"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work-dir", required=True, type=Path)
    parser.add_argument("--models-dir", required=True, type=Path)
    parser.add_argument("--version", required=True)
    parser.add_argument("--reading-version", required=True)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--select", action="store_true", help="only run the selection on the selection months")
    parser.add_argument("--reuse-evaluation", action="store_true",
                        help="reuse the selection and rolling origin saved in the work directory by an earlier run")
    args = parser.parse_args()
    started = time.time()
    data = Dataset(args.work_dir)
    h = History(args.work_dir, data)
    steps = len(SELECTION_MONTHS) + (0 if args.select else len(TEST_MONTHS) + 2)
    done = [0]

    def step(message):
        progress(done[0], steps, message)
        done[0] += 1

    saved = args.work_dir / "history-evaluation.pickle"
    if args.reuse_evaluation:
        import pickle
        with open(saved, "rb") as handle:
            selection, ro = pickle.load(handle)
    else:
        selection = select_settings(h, args.seed, step)
        print(json.dumps({"selection": selection}), flush=True)
        if args.select:
            return
        ro = evaluate_rolling_origin(data, h, Lags(data), selection["chosen"], args.seed, step)
        import pickle
        with open(saved, "wb") as handle:
            pickle.dump((selection, ro), handle)
    settings = selection["chosen"]

    step("fitting the shipped model on every row")
    model = HistoryModel(h, np.arange(len(h.y)), settings, args.seed)
    rr = ro["_r"]
    model.offsets = band_quantiles(rr["residual"], rr["horizon"])  # forward residuals of the rolling origins

    step("writing and verifying the ONNX graph, holdout rows, plot and card")
    name = f"aqi-history-{args.version}"
    description = (f"AQI model {name}: input float32 [N,{len(h.names)}] in the layout {h.names}; outputs z, dz_low, "
                   "dz_high; aqi = expm1(log1p(window_arithmetic_aqi) + z), interval ends with z + dz_low / z + dz_high")
    proto, ensembles = history_graph(h, model, args.version, description)
    onnx_path = args.models_dir / f"{name}.onnx"
    onnx.save(proto, onnx_path)
    rows, X32, expected = holdout(h, model, args.seed)
    graph = evaluate_onnx_independently(onnx.load(onnx_path), X32)
    wa32 = X32[:, h.names.index("window_arithmetic_aqi")].astype(np.float64)
    reevaluated = {"aqi": from_z(graph["z"], wa32), "aqi_low": from_z(graph["z"] + graph["dz_low"], wa32),
                   "aqi_high": from_z(graph["z"] + graph["dz_high"], wa32)}
    max_difference = max(float(np.max(np.abs(reevaluated[k] - expected[k]))) for k in expected)
    if max_difference >= 1e-2:
        raise SystemExit(f"ONNX re-evaluation differs from the trainer by {max_difference}")
    holdout_path = args.models_dir / f"{name}.holdout.json"
    with open(holdout_path, "w", encoding="utf-8") as handle:
        json.dump({"modelVersion": name, "onnx": onnx_path.name, "featureNames": h.names, "tolerance": 0.01,
                   "notes": ["features: the float32 input row the trainer scored (null = NaN), computed by the "
                             "service's TypeScript from the request's recent_hours; the service must reproduce it",
                             "expected: the trainer's predictions (float64 arithmetic on the float32 row)"],
                   "rows": rows}, handle, separators=(",", ":"))
        handle.write("\n")
    plot_path = args.models_dir / f"{name}-mae-by-horizon.svg"
    svg_plot(plot_path, ro)

    per = ro["perHorizon"]
    targets = {"1": 0.70, "3": 0.78, "6": 0.85, "12": 0.92, "24": 1.0, "48": None}
    checks = {}
    for x in HORIZONS:
        target = targets[str(x)]
        if target is not None:
            checks[f"{x} h MAE <= {target} x persistence" if target < 1 else f"{x} h MAE below persistence"] = (
                per[str(x)]["ratioToPersistence"] <= target if target < 1 else per[str(x)]["ratioToPersistence"] < 1)
        checks[f"{x} h MAE below the window arithmetic"] = per[str(x)]["ratioToWindowArithmetic"] < 1
    for b, (low, high) in enumerate(BANDS):
        inside = [x for x in HORIZONS if low <= x <= high]
        for x in inside:
            checks[f"coverage at {x} h (band {low}-{high} h) within 0.75-0.85"] = 0.75 <= per[str(x)]["interval"]["coverage"] <= 0.85
    card = {
        "modelVersion": name,
        "task": "hourly national (CPCB) AQI at a Delhi station 1 to 48 hours after its newest hourly reading, from the "
                "station's last up to 72 hours of pollutant readings, the hour, season and the weather at the predicted hour",
        "trainedAt": dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
        "seed": args.seed,
        "readingModelCard": f"aqi-reading-{args.reading_version}.md",
        "artifact": {
            "file": onnx_path.name, "sha256": hashlib.sha256(onnx_path.read_bytes()).hexdigest(),
            "bytes": onnx_path.stat().st_size, "opsets": {"ai.onnx.ml": 3, "": 17},
            "input": {"name": "input", "type": "float32", "shape": ["N", len(h.names)], "layout": h.names, "missing": "NaN"},
            "graph": "Three TreeEnsembleRegressor nodes. z: the band models of the residual of the window arithmetic in "
                     "log space, tree k holding every band's k-th tree behind a binary search on horizon_hours (a leaf "
                     "0 for a band that kept the window arithmetic), leaves times the band's shrinkage, with "
                     "missing-value tracks (a pollutant a station does not measure is NaN); dz_low / "
                     "dz_high: one tree each, a binary search on horizon_hours to the band's 0.1 / 0.9 residual "
                     "quantile. The service computes aqi = expm1(log1p(window_arithmetic_aqi) + z) and the interval "
                     "ends with z + dz_low and z + dz_high (aqiFromWindowArithmeticZ in "
                     "workers/aqi/src/domain/prediction.ts).",
            "ensembles": ensembles,
            "verification": {"method": "graph re-evaluated from its own attributes in float32 on the holdout rows "
                                       "against the trainer's predictions", "maxAbsDifferenceAqi": max_difference},
        },
        "preprocessing": {**data.meta["preprocessing"], "historyColumns": h.meta["historyColumns"]},
        "model": {
            "estimator": f"sklearn {sklearn.__version__} HistGradientBoostingRegressor",
            "target": "z = log1p(aqi) - log1p(window_arithmetic_aqi) (z = 0 is the window arithmetic); loss absolute "
                      "error (the median)",
            "params": {"base": BASE, "sizes": CANDIDATES},
            "bands": settings,
            "firstDesign": first_design(),
            "inputs": ("every column of the layout except visibility (never measured)"
                       ": the station, season, calendar and weather columns of the weather-only model, the "
                       "horizon, the hour of the newest reading, the AQI at the newest reading, the window "
                       "arithmetic AQI, and per pollutant its CPCB average and sub-index at the newest reading, "
                       "its average in the window arithmetic, its newest value, the mean of its newest three and "
                       "of the three before them, its value 24 hours before the predicted hour and the mean of "
                       "the hours that leave its window by the predicted hour"),
            "training": (f"{len(h.y)} rows: every station-hour with a valid AQI paired with the station's readings "
                         f"before it, at the horizons {HORIZONS} h and {h.meta['randomHorizonsPerHour']} horizons "
                         "drawn from 1..48 h (a pair is kept when its newest hour has a reading and a CPCB AQI); "
                         f"{h.meta['skippedNoNewestReading']} pairs had no reading at the newest hour and "
                         f"{h.meta['skippedNoAqiAtNewest']} no CPCB AQI there"),
            "selection": selection,
            "interval": {"method": "z plus the horizon band's 0.1 and 0.9 quantiles of forward residuals (calibrated per "
                                   f"band {[list(b) for b in BANDS]} h). In the rolling origin: residuals of a model fitted "
                                   f"before the latest {CALIBRATION_HOURS // 2} hours before the month, measured on them. "
                                   "Shipped: the rolling origins' forward residuals.",
                         "shippedOffsetsZ": [list(o) for o in model.offsets]},
        },
        "evaluation": {
            "rollingOrigin": {k: v for k, v in ro.items() if not k.startswith("_")},
            "acceptance": {"targetRatioToPersistence": {k: (v if v is not None else "-") for k, v in targets.items()},
                           "checks": checks, "allMet": all(checks.values())},
        },
        "limits": [
            "Two stations (Chandni Chowk, Lodhi Road), 2020-11 to 2023-03, with a four-month hole in late 2022; other "
            "stations are scored as the nearest of the two.",
            "From 24 hours ahead no hour of the predicted hour's window is measured: the model starts from the AQI at "
            "the newest reading and the gain over it is small.",
        ] + season_limits(ro),
        "environment": {"scikit-learn": sklearn.__version__, "numpy": np.__version__, "onnx": onnx.__version__,
                        "trainingSeconds": round(time.time() - started, 1)},
        "files": {"onnx": onnx_path.name, "holdout": holdout_path.name, "plot": plot_path.name, "card": f"{name}.md"},
    }
    with open(args.models_dir / f"{name}.json", "w", encoding="utf-8") as handle:
        json.dump(card, handle, indent=2)
        handle.write("\n")
    (args.models_dir / f"{name}.md").write_text(render_markdown(card), encoding="utf-8")
    progress(steps, steps, f"done: {onnx_path.name} in {round(time.time() - started)} s")
    print(json.dumps({"summary": {
        "perHorizon": {x: {k: per[x][k]["mae"] for k in ("model", "persistence", "windowArithmetic", "readingModel")}
                       | {"ratio": per[x]["ratioToPersistence"], "coverage": per[x]["interval"]["coverage"]} for x in per},
        "acceptance": checks, "onnxMaxAbsDifference": max_difference}}), flush=True)


if __name__ == "__main__":
    main()
