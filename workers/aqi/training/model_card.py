"""Renders the human-readable model card (aqi-<version>.md) from the machine-readable one (aqi-<version>.json)."""

from __future__ import annotations


def _table(header: list, rows: list) -> str:
    lines = ["| " + " | ".join(str(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join("" if c is None else str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _metric_rows(results: list) -> list:
    return [[name, r["mae"], r["rmse"], r["r2"], r["categoryExact"], r["categoryWithinOne"], r["n"]] for name, r in results]


METRIC_HEADER = ["predictor", "MAE", "RMSE", "R²", "category exact", "category within one", "rows"]


def render_markdown(card: dict) -> str:
    ev = card["evaluation"]
    cv = ev["blockedCv"]
    fw = ev["forwardSplit"]
    leak = ev["randomSplitLeakageDemo"]
    art = card["artifact"]
    dq = card["dataQuality"]
    calc = card["calculatorCheck"]
    pre = card["preprocessing"]
    files = card["files"]
    out = []
    add = out.append

    add(f"# Model card: {card['modelVersion']}")
    add("")
    add(f"Task: {card['task']}. Trained {card['trainedAt']} with seed {card['seed']} "
        f"on {card['provenance']['rows']} station-hours ({card['provenance']['period']}).")
    add("")
    add("**Expect modest skill.** Weather and calendar explain little of hourly AQI out of period: on blocked "
        f"time-series cross-validation the model's MAE is {cv['model']['mae']} against {cv['climatology']['mae']} for a "
        f"climatology (mean per station, month and hour) and {cv['trainingMean']['mae']} for the training mean, with "
        f"R² {cv['model']['r2']}. It is a better climatology that also reads the weather, not a forecast of episodes. "
        f"The R² of {ev['randomSplitLeakageDemo']['bigModelRandomSplit']['r2']} that a big model reaches on a shuffled split "
        "is leakage (below).")
    add("")
    add("## Evaluation")
    add("")
    add(f"### Blocked time-series cross-validation (the headline)")
    add("")
    add(cv["design"] + ".")
    add("")
    add(_table(METRIC_HEADER, _metric_rows([("model", cv["model"]), ("climatology (station x month x hour)", cv["climatology"]),
                                            ("training mean", cv["trainingMean"])])))
    add("")
    iv = cv["interval"]
    add(f"80% interval: empirical coverage **{iv['coverage']}** (nominal {iv['nominal']:.1f}; uncalibrated quantile models "
        f"alone: {iv['coverageUncalibrated']}), mean width {iv['meanWidth']} AQI, per-fold coverage "
        f"{iv['perFoldCoverageRange'][0]} to {iv['perFoldCoverageRange'][1]}.")
    add("")
    acc = ev["acceptance"]
    add(f"Acceptance: beats training mean on MAE: {acc['beatsTrainingMeanOnBlockedCvMae']}; beats climatology on MAE: "
        f"{acc['beatsClimatologyOnBlockedCvMae']}; coverage within 0.75-0.85: {acc['intervalCoverageWithin075To085']}.")
    add("")
    if files.get("plot"):
        add(f"![Predicted against actual AQI on the blocked-CV folds]({files['plot']})")
        add("")
    add("Per season (pooled out-of-fold rows):")
    add("")
    add(_table(["season", "rows", "MAE model", "MAE climatology", "MAE training mean", "R² model", "category exact (model)",
                "interval coverage", "mean interval width"],
               [[s, r["model"]["n"], r["model"]["mae"], r["climatology"]["mae"], r["trainingMean"]["mae"], r["model"]["r2"],
                 r["model"]["categoryExact"], r["intervalCoverage"], r["meanIntervalWidth"]] for s, r in cv["perSeason"].items()]))
    add("")
    add("Per fold:")
    add("")
    add(_table(["fold", "test period", "train rows", "test rows", "MAE model", "MAE climatology", "MAE training mean",
                "interval offset", "coverage"],
               [[f["fold"], f"{f['testFrom']} .. {f['testTo']}", f["trainRows"], f["testRows"], f["maeModel"],
                 f["maeClimatology"], f["maeTrainingMean"], f["intervalOffset"], f["intervalCoverage"]] for f in cv["perFold"]]))
    add("")
    add("The data has a hole from August to mid-December 2022 (both stations), so fold boundaries are by row count, "
        "not calendar time. Per-season R² is measured against each season's own mean, so it is low or negative where "
        "the model mostly explains differences between seasons rather than hours within one. Coverage varies by fold "
        "because the spread of AQI shifts from one period to another; the interval is calibrated for the pooled rate.")
    add("")
    add("### Forward split")
    add("")
    add(fw["design"] + ".")
    add("")
    add(_table(METRIC_HEADER, _metric_rows([("model", fw["model"]), ("climatology", fw["climatology"]),
                                            ("training mean", fw["trainingMean"])])))
    add("")
    add(f"80% interval coverage on the forward test: {fw['intervalCoverage']}. The forward test period is the one in "
        "which the Chandni Chowk thermometer drifted, so the model scores it with temperature missing.")
    add("")
    add("### Leakage demonstration: a shuffled split (shown once, not a result)")
    add("")
    add(leak["design"] + ".")
    add("")
    add(_table(["model and split", "MAE", "RMSE", "R²"], [
        ["big model (255 leaves, 400 trees, day of month included), shuffled 80/20", leak["bigModelRandomSplit"]["mae"],
         leak["bigModelRandomSplit"]["rmse"], leak["bigModelRandomSplit"]["r2"]],
        ["same big model, blocked CV", leak["bigModelBlockedCv"]["mae"], leak["bigModelBlockedCv"]["rmse"],
         leak["bigModelBlockedCv"]["r2"]],
        ["shipped small model, shuffled 80/20", leak["shippedModelRandomSplit"]["mae"],
         leak["shippedModelRandomSplit"]["rmse"], leak["shippedModelRandomSplit"]["r2"]],
        ["shipped small model, blocked CV", cv["model"]["mae"], cv["model"]["rmse"], cv["model"]["r2"]],
    ]))
    add("")
    add("This is how the original project reports R² 0.98: neighbouring hours of one pollution episode fall on both "
        "sides of a shuffled split, and a model that memorises dates scores well on hours it has effectively seen. On "
        "a time split the same big model is worse than the small one.")
    add("")
    ab = ev["dayOfMonthAblation"]["blockedCvWithDay"]
    add(f"Day of month: adding it as a feature changes blocked-CV MAE from {cv['model']['mae']} to {ab['mae']} "
        f"(R² {cv['model']['r2']} -> {ab['r2']}), which is why it is validated but not a model input.")
    add("")
    add("## Model and artifact")
    add("")
    m = card["model"]
    add(f"- Estimator: {m['estimator']}, point loss `{m['pointLoss']}` (conditional median), params "
        f"`{m['params']}`.")
    add(f"- Interval: {m['interval']['method']}. Shipped offset: {m['interval']['shippedOffset']} AQI. "
        f"Serving rule: {m['interval']['servingRule']}.")
    add(f"- Selection: {m['selection']}.")
    add(f"- File `{art['file']}` ({art['bytes']} bytes, sha256 `{art['sha256']}`), IR {art['irVersion']}, opsets "
        f"{art['opsets']}. One graph with three `ai.onnx.ml` TreeEnsembleRegressor nodes sharing one input:")
    add("")
    add(_table(["name", "type", "shape", "meaning"],
               [[art["input"]["name"], art["input"]["type"], art["input"]["shape"], "feature rows, NaN = missing"]] +
               [[o["name"], o["type"], o["shape"], o["meaning"]] for o in art["outputs"]]))
    add("")
    add(_table(["output", "trees", "nodes", "offset added to base value"],
               [[k, v["trees"], v["nodes"], v["baseOffset"]] for k, v in art["ensembles"].items()]))
    add("")
    add(f"- Export verified: {art['verification']['method']}; max absolute difference "
        f"{art['verification']['maxAbsDifferenceAqi']:.2e} AQI. Thresholds are written as the largest float32 not above "
        "sklearn's float64 threshold, which makes float32 comparisons exact. `verify-onnx.ts` (last step of "
        f"`npm run train:aqi`) runs the file in onnxruntime on `{files['holdout']}` (150 request rows and 30 rows with "
        "missing weather, batches of 100, tolerance 0.01 AQI); the service's workerd test uses the same rows.")
    add("")
    add("## Features and preprocessing")
    add("")
    fl = card["featureLayout"]
    add(f"One definition: `{fl['module']}`. The trainer encodes its rows with it and the Worker encodes requests with "
        "it; the data-dependent part (below) is the `preprocessing` object of the JSON card, which the service loads "
        f"and checks with `assertSpecMatchesCode`. Scaling: {fl['scaling']}.")
    add("")
    counts = fl["splitsPerFeature"]
    add(_table(["index", "column", "splits (aqi / aqi_low / aqi_high)"],
               [[i, name, f"{counts['aqi'][name]} / {counts['aqi_low'][name]} / {counts['aqi_high'][name]}"]
                for i, name in enumerate(fl["columns"])]))
    add("")
    add(_table(["request field", "how it enters the model"], [[k, v] for k, v in fl["requestFields"].items()]))
    add("")
    add(_table(["training station", "latitude", "longitude", "aliases"],
               [[s["name"], s["latitude"], s["longitude"], ", ".join(s["aliases"])] for s in pre["stations"]]))
    add("")
    add(f"Features missing in training (encoded as NaN whatever the request says): {pre['featuresMissingInTraining']}.")
    add("")
    add(f"**Unseen stations.** {card['unseenStations']}")
    add("")
    add("## Target")
    add("")
    add(card["target"]["definition"] + ". Calculator: `workers/aqi/src/domain/aqi-calculator.ts` (unit-tested).")
    add("")
    add("### Calculator check against a published AQI")
    add("")
    if calc is None:
        add("Skipped: `rohanrao_station_day_subset.csv` was not found in the data directory.")
        add("")
    else:
        add(f"Source: {calc['source']}. Method: {calc['method']}. Days with a published AQI: {calc['daysWithPublishedAqi']}; "
            f"invalid by the data rule: {calc['daysInvalidByDataRule']}.")
        add("")
        add(_table(["subset", "days", "exact", "within 5", "within 10", "within 25", "MAE", "median diff", "category exact",
                    "category within one"],
                   [[name, s["days"], f"{s['exactPercent']}%", f"{s['within5Percent']}%", f"{s['within10Percent']}%",
                     f"{s['within25Percent']}%", s["meanAbsoluteDifference"], s["medianDifference"], f"{s['categoryExactPercent']}%",
                     f"{s['categoryWithinOnePercent']}%"]
                    for name, s in [("all stations", calc["overall"]), ("Delhi stations", calc["delhiStations"])] +
                    [(f"dominant {k}", v) for k, v in calc["byDominantPollutant"].items()]]))
        add("")
        add("The file has only daily means, while the published index was computed from hourly series (rolling 24-hour "
            "means and 8-hour maxima). Daily means understate the 8-hour maxima, hence the negative median difference, "
            "largest where CO or O3 dominates. Exact agreement is not reachable from these inputs; the category agrees "
            f"on {calc['overall']['categoryExactPercent']}% of days and is within one band on "
            f"{calc['overall']['categoryWithinOnePercent']}%.")
        add("")
    add("## Data quality")
    add("")
    for st in dq["stations"]:
        gaps = "; ".join(f"{g['from']} .. {g['to']} ({g['days']} days)" for g in st["gapsOfAtLeast14Days"]) or "none"
        add(f"- **{st['station']}** (`{st['sourceFile']}`): {st['hoursWithValidAqi']} hours with a valid AQI of "
            f"{st['hoursInFile']} in the file (without AQI: {st['hoursWithoutAqi']}); gaps of 14+ days: {gaps}. "
            f"Temperature: {st['temperatureSource']}. Target rows with temperature {st['targetRowsWith']['temperature']}, "
            f"humidity {st['targetRowsWith']['humidity']}, wind {st['targetRowsWith']['wind_speed']}, visibility "
            f"{st['targetRowsWith']['visibility']}.")
    add("")
    add("### Thermometer drift")
    add("")
    add("Detection (`workers/aqi/training/data-quality.ts`): daily mean temperature minus the New Delhi (Safdarjung) "
        "monthly normal, then the single step that best splits that anomaly series (least squares, segments of at "
        "least 60 days); a step above 2 C is drift.")
    add("")
    for finding in dq["temperatureDrift"]:
        if not finding["monthly"]:
            add(f"- {finding['station']}: {finding['action']}.")
            continue
        add(f"- **{finding['station']}**: drift detected: {finding['detected']}"
            + (f", from {finding['driftStartDate']}; mean anomaly {finding['meanAnomalyBeforeC']} C before, "
               f"{finding['meanAnomalyAfterC']} C after (step {finding['stepC']} C); December means "
               f"{finding['decemberMeansC']}; {finding['hoursExcluded']} hourly readings excluded." if finding["detected"] else
               f". {finding['action']}."))
        if finding["detected"]:
            add(f"  Action: {finding['action']}")
        add("")
        add(_table(["month", "hours", "mean C", "normal C", "anomaly C"],
                   [[r["month"], r["hours"], r["meanC"], r["normalC"], r["anomalyC"]] for r in finding["monthly"]]))
        add("")
    for borrow in dq["temperatureBorrowing"]:
        add(f"- {borrow['station']} has no thermometer: {borrow['hoursFilled']} hours take {borrow['from']}'s trusted "
            f"reading of the same hour ({borrow['distanceKm']} km away); its hours in the drifted period stay missing.")
    add(f"- Visibility: {dq['visibility']}.")
    add(f"- Wind speed: {dq['windSpeedConversion']}. Plausibility ranges (outside = missing): {dq['plausibleRanges']}.")
    add("- Missing weather readings stay missing (NaN): the gradient boosting learns a branch for them. The service "
        "always sends temperature, humidity and wind, so it follows the branches learned from real readings.")
    add("")
    add("## Provenance and reproduction")
    add("")
    add(f"- Origin: {card['provenance']['origin']}.")
    add("- Files (sha256): " + "; ".join(f"`{f['file']}` `{f['sha256'][:16]}...`" for f in card["provenance"]["files"]) + ".")
    env = card["environment"]
    add(f"- Environment: Python {env['python']}, numpy {env['numpy']}, scikit-learn {env['scikit-learn']}, onnx "
        f"{env['onnx']}; training took {env['trainingSeconds']} s. Seed {card['seed']}; the pipeline is deterministic for "
        "a given seed (the ONNX file's bytes repeat).")
    add("- Reproduce: `npm run train:aqi` (see `workers/aqi/training/README.md`).")
    add("")
    return "\n".join(out)
