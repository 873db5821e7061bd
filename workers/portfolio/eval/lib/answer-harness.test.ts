/**
 * The evaluation harness runs the worker's pipeline in Node: local providers
 * by default, Workers AI providers when given an AI runner (here a fake that
 * embeds with the lexical vectors, so no network is needed).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { lexicalVector } from "../../src/providers/lexical-embedder.ts";
import type { AiRunner } from "../../src/providers/workers-ai.ts";
import { createAnswerer } from "./answer-harness.ts";

const QUERY_PREFIX = "Represent this sentence for searching relevant passages: ";

class LexicalAi implements AiRunner {
  embedded = 0;
  async run(_model: string, inputs: Record<string, unknown>) {
    const texts = inputs.text as string[];
    this.embedded += texts.length;
    return { data: texts.map((text) => lexicalVector(text.replace(QUERY_PREFIX, ""))) };
  }
}

describe("answer evaluation harness", () => {
  it("every question of both splits gets a non-empty answer", async () => {
    const answerer = await createAnswerer();
    for (const split of ["dev", "test"]) {
      const file = path.join(import.meta.dirname, `../answer-questions.${split}.json`);
      const { questions } = JSON.parse(readFileSync(file, "utf8")) as {
        questions: { question: string }[];
      };
      for (const { question } of questions) {
        const answer = await answerer.ask(question);
        expect(answer.text.trim(), question).not.toBe("");
        expect(answer.route, question).not.toBe("error_fallback");
      }
    }
  });

  it("runs the local pipeline: a stated fact with its source, a decline without", async () => {
    const answerer = await createAnswerer();
    const fact = await answerer.ask("When did Avery start at Northwind Health?");
    expect(fact.text).toContain("2021");
    expect(fact.route).toBe("llm");
    expect(fact.sources.map((source) => source.title)).toContain(
      "Resume: Staff Engineer at Northwind Health",
    );
    const declined = await answerer.ask("Has Avery used Kubernetes?");
    expect(declined).toMatchObject({
      route: "confidence_fallback",
      gateReason: "entity_not_found",
      sources: [],
    });
  });

  it("with an AI runner (--remote) embeds through the Workers AI provider; thresholds come from the environment", async () => {
    const ai = new LexicalAi();
    const answerer = await createAnswerer({ ai, env: { RETRIEVAL_MIN_SIMILARITY: "0.5" } });
    expect(ai.embedded).toBeGreaterThan(20);
    const fact = await answerer.ask("How many hospitals use Signal Canvas?");
    expect(fact.text).toContain("40 hospitals");
    const strict = answerer.withThresholds({ minSimilarity: 0.99, strongSimilarity: 0.999 });
    expect(await strict.ask("How many hospitals use Signal Canvas?")).toMatchObject({
      route: "confidence_fallback",
      gateReason: "low_similarity",
    });
  });
});
