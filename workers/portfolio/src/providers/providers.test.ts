import { describe, expect, it } from "vitest";
import { cosine } from "../domain/vectors.ts";
import { lexicalVector } from "./lexical-embedder.ts";
import { textDeltas } from "./workers-ai.ts";

describe("lexical embedder", () => {
  it("is deterministic and unit length", () => {
    const a = lexicalVector("What projects has Avery built?");
    expect(a).toEqual(lexicalVector("What projects has Avery built?"));
    expect(Math.hypot(...a)).toBeCloseTo(1, 6);
    expect(a).toHaveLength(1024);
  });

  it("scores same-meaning wording at 1, related text above unrelated text", () => {
    expect(
      cosine(
        lexicalVector("What projects has Avery built?"),
        lexicalVector("which project did avery build"),
      ),
    ).toBeCloseTo(1, 6);
    const chunk = lexicalVector(
      "Project: Signal Canvas\nTechnologies: React, TypeScript\nOverview: a clinical dashboard",
    );
    const related = cosine(lexicalVector("Tell me about the Signal Canvas dashboard"), chunk);
    const unrelated = cosine(lexicalVector("favourite pizza topping"), chunk);
    expect(related).toBeGreaterThan(0.5);
    expect(unrelated).toBeLessThan(0.4);
  });

  it("embeds text without content words as the zero vector", () => {
    expect(lexicalVector("the and of").every((value) => value === 0)).toBe(true);
  });
});

describe("Workers AI stream parsing", () => {
  it("yields the deltas of `response` and OpenAI-style events, skipping [DONE] and blanks", async () => {
    const body = [
      'data: {"response":"Hel"}',
      "",
      'data: {"response":""}',
      "",
      'data: {"choices":[{"delta":{"content":"lo"}}]}',
      "",
      "data: [DONE]",
      "",
    ].join("\n");
    const encoder = new TextEncoder();
    // Split mid-event to prove buffering across reads.
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode(body.slice(0, 13)));
        controller.enqueue(encoder.encode(body.slice(13)));
        controller.close();
      },
    });
    const pieces: string[] = [];
    for await (const piece of textDeltas(stream)) pieces.push(piece);
    expect(pieces).toEqual(["Hel", "lo"]);
  });
});
