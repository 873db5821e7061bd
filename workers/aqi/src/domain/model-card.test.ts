/**
 * The shipped model card and holdout rows against this code: the card's
 * preprocessing spec must fit the compiled feature layout, encodeFeatures
 * must re-encode every stored request to exactly the trainer's row, and the
 * card must meet the acceptance criteria. (The ONNX outputs themselves are
 * matched against the trainer's predictions by the service's workerd test and
 * by workers/aqi/training/verify-onnx.ts.)
 */
import { describe, expect, it } from "vitest";
import holdout from "../../../../models/aqi-1.0.0.holdout.json";
import card from "../../../../models/aqi-1.0.0.json";
import {
  assertSpecMatchesCode,
  encodeFeatures,
  FEATURE_COUNT,
  type FeatureInput,
  type PreprocessingSpec,
} from "./features.ts";

const spec = card.preprocessing as PreprocessingSpec;

describe("shipped model card aqi-1.0.0", () => {
  it("was written for this feature layout", () => {
    expect(() => assertSpecMatchesCode(spec)).not.toThrow();
    expect(card.artifact.input.shape).toEqual(["N", FEATURE_COUNT]);
    expect(card.artifact.outputs.map((output) => output.name)).toEqual([
      "aqi",
      "aqi_low",
      "aqi_high",
    ]);
  });

  it("re-encodes every holdout request to the trainer's float32 feature row", () => {
    expect(holdout.rows.length).toBeGreaterThanOrEqual(100);
    for (const row of holdout.rows) {
      const encoded = encodeFeatures(row.request as FeatureInput, spec).map((value) =>
        Math.fround(value),
      );
      const stored = row.features.map((value) =>
        value === null ? Number.NaN : Math.fround(value),
      );
      expect(encoded).toEqual(stored);
    }
  });

  it("beats both references on blocked-CV MAE with an interval coverage of 0.75-0.85", () => {
    const blockedCv = card.evaluation.blockedCv;
    expect(blockedCv.model.mae).toBeLessThan(blockedCv.climatology.mae);
    expect(blockedCv.model.mae).toBeLessThan(blockedCv.trainingMean.mae);
    expect(blockedCv.interval.coverage).toBeGreaterThanOrEqual(0.75);
    expect(blockedCv.interval.coverage).toBeLessThanOrEqual(0.85);
  });
});
