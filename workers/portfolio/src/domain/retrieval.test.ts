import { describe, expect, it } from "vitest";
import {
  assessConfidence,
  bm25Scores,
  type CandidateChunk,
  limitCandidates,
  rerank,
} from "./retrieval.ts";

const thresholds = { minSimilarity: 0.5, strongSimilarity: 0.72, minQueryCoverage: 0.18 };

function candidate(overrides: Partial<CandidateChunk>): CandidateChunk {
  return {
    id: overrides.id ?? crypto.randomUUID(),
    source: "project",
    sourceId: "p#overview",
    itemId: "p",
    title: "P",
    content: "Project: P",
    chunkIndex: 0,
    similarity: 0.6,
    ...overrides,
  };
}

describe("confidence gate", () => {
  it("empty_results with no chunks", () => {
    expect(assessConfidence("What projects?", [], thresholds).reason).toBe("empty_results");
  });

  it("low_similarity below 0.50", () => {
    const decision = assessConfidence(
      "What is his favorite color?",
      [{ similarity: 0.31, score: 0.31, queryTermCoverage: 0.5 }],
      thresholds,
    );
    expect(decision).toMatchObject({ confident: false, reason: "low_similarity" });
  });

  it("low_term_coverage between 0.50 and 0.72 without enough overlap", () => {
    const decision = assessConfidence(
      "Zebra quantum marmalade?",
      [{ similarity: 0.6, score: 0.6, queryTermCoverage: 0.1 }],
      thresholds,
    );
    expect(decision).toMatchObject({ confident: false, reason: "low_term_coverage" });
  });

  it("a strong match (>= 0.72) needs no overlap; a medium one with coverage passes", () => {
    expect(
      assessConfidence(
        "anything here",
        [{ similarity: 0.86, score: 0.86, queryTermCoverage: 0 }],
        thresholds,
      ).confident,
    ).toBe(true);
    expect(
      assessConfidence(
        "anything here",
        [{ similarity: 0.55, score: 0.55, queryTermCoverage: 0.2 }],
        thresholds,
      ).confident,
    ).toBe(true);
  });

  it("ignored terms (the person's name) do not count as question terms", () => {
    const chunks = [{ similarity: 0.45, score: 0.45, queryTermCoverage: 0 }];
    expect(assessConfidence("Avery?", chunks, thresholds, new Set(["avery"])).reason).toBe(
      "low_similarity",
    );
  });
});

describe("reranking and caps", () => {
  it("keeps at most 8 candidates per source and 3 per item before reranking", () => {
    const many = Array.from({ length: 20 }, (_, i) =>
      candidate({ id: `c${i}`, itemId: `item${i % 4}`, similarity: 1 - i / 100 }),
    );
    const kept = limitCandidates(many, { total: 32, perSource: 8 });
    expect(kept).toHaveLength(8);
    const perItem = new Map<string, number>();
    for (const chunk of kept) perItem.set(chunk.itemId, (perItem.get(chunk.itemId) ?? 0) + 1);
    expect(Math.max(...perItem.values())).toBeLessThanOrEqual(3);
  });

  it("caps sources by intent and prefers project chunks for project questions", () => {
    const chunks = [
      ...Array.from({ length: 6 }, (_, i) =>
        candidate({
          id: `p${i}`,
          itemId: `proj${i}`,
          content: `Project: Thing ${i}\nTechnologies: Go`,
          similarity: 0.6,
        }),
      ),
      ...Array.from({ length: 4 }, (_, i) =>
        candidate({
          id: `t${i}`,
          source: "testimonial",
          itemId: `t${i}`,
          content: "Testimonial: great",
          similarity: 0.7,
        }),
      ),
    ];
    const selected = rerank("Which projects were built?", chunks, 8);
    expect(selected.filter((chunk) => chunk.source === "project")).toHaveLength(4);
    expect(selected.filter((chunk) => chunk.source === "testimonial")).toHaveLength(1);
    expect(selected[0]!.source).toBe("project");
    expect(selected[0]!.score).toBeGreaterThan(selected[0]!.similarity);
  });
});

describe("BM25 in the rerank", () => {
  it("weighs a rare term over common ones", () => {
    const docs = [
      { content: "Company: Brightlane Labs\nBuilt tools and APIs for a logistics start-up." },
      { content: "Built tools and APIs and dashboards and tools." },
      { content: "APIs, tools, dashboards." },
    ];
    const scores = bm25Scores(
      new Set(["brightlane", "tool"]),
      new Set(["brightlane", "tool"]),
      docs,
    );
    expect(scores[0]).toBeGreaterThan(scores[1]!);
    expect(scores[0]).toBeGreaterThan(scores[2]!);
    expect(bm25Scores(new Set(["zebra"]), new Set(["zebra"]), docs)).toEqual([0, 0, 0]);
  });

  it("ranks the chunk holding the question's rare term first, and the job covering a named year", () => {
    const ranked = rerank(
      "Where did Avery work in 2017?",
      [
        candidate({
          id: "a",
          source: "resume",
          itemId: "a",
          content: "Role: Staff Engineer\nDates: 2021 to present",
          similarity: 0.6,
        }),
        candidate({
          id: "b",
          source: "resume",
          itemId: "b",
          content: "Role: Software Engineer\nDates: 2016 to 2018",
          similarity: 0.55,
        }),
      ],
      2,
      new Set(["avery"]),
    );
    expect(ranked[0]!.id).toBe("b");
  });

  it("coverage counts the question's own terms, each met by itself or a synonym", () => {
    const [ranked] = rerank(
      "Which country is Avery in?",
      [candidate({ content: "Senior Software Engineer based in Lisbon, Portugal" })],
      1,
      new Set(["avery"]),
    );
    expect(ranked!.queryTermCoverage).toBe(1);
  });
});
