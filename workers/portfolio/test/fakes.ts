import { Hono } from "hono";
import type { PortfolioContent } from "../src/domain/content.ts";
import { cosine } from "../src/domain/vectors.ts";
import type { VectorizeLike } from "../src/providers/vector-indexes.ts";
import type { AiRunner } from "../src/providers/workers-ai.ts";

/**
 * Test doubles for the production bindings (Workers AI and Vectorize have no
 * local mode) and a fake Sanity-compatible CMS. They implement the same
 * wire shapes as the real services, so the production providers run their
 * real code against them.
 */

const QUERY_PREFIX = "Represent this sentence for searching relevant passages: ";
const DIMENSIONS = 64;

export type GenerationBehaviour =
  | { kind: "answer"; pieces: string[] }
  | { kind: "fail" }
  | { kind: "partial"; pieces: string[] };

/** How the stand-in Llama Guard answers (the binding's object shape, its raw text, or a failure). */
export type GuardBehaviour =
  | { kind: "safe" }
  | { kind: "unsafe"; categories: string[] }
  | { kind: "text"; text: string }
  | { kind: "fail" }
  | { kind: "slow"; ms: number };

export class FakeAi implements AiRunner {
  readonly calls: { model: string; inputs: Record<string, unknown> }[] = [];
  guard: GuardBehaviour = { kind: "safe" };
  generation: GenerationBehaviour = {
    kind: "answer",
    pieces: ["Avery ", "built ", "Signal ", "Canvas."],
  };
  /**
   * Query vectors by question; documents all embed to the first axis. By
   * default a question scores 0.95 against every document, and two different
   * questions score about 0.90 against each other (below the cache's 0.95).
   */
  queryVector: (question: string) => number[] = (question) => distinctQuery(question);
  failEmbeddings = false;

  get generationCalls() {
    return this.calls.filter((call) => "messages" in call.inputs && !isGuardModel(call.model));
  }

  get guardCalls() {
    return this.calls.filter((call) => isGuardModel(call.model));
  }

  private async runGuard(): Promise<unknown> {
    const behaviour = this.guard;
    switch (behaviour.kind) {
      case "safe":
        return { response: { safe: true, categories: [] } };
      case "unsafe":
        return { response: { safe: false, categories: behaviour.categories } };
      case "text":
        return { response: behaviour.text };
      case "fail":
        throw new Error("AI safety model upstream error 500");
      case "slow":
        await new Promise((resolve) => setTimeout(resolve, behaviour.ms));
        return { response: { safe: false, categories: ["S12"] } };
    }
  }

  async run(model: string, inputs: Record<string, unknown>): Promise<unknown> {
    this.calls.push({ model, inputs: structuredClone(inputs) });
    if (isGuardModel(model)) return this.runGuard();
    if (Array.isArray(inputs.text)) {
      if (this.failEmbeddings) throw new Error("AI embedding upstream error 502");
      const texts = inputs.text as string[];
      return {
        shape: [texts.length, DIMENSIONS],
        data: texts.map((text) =>
          text.startsWith(QUERY_PREFIX)
            ? this.queryVector(text.slice(QUERY_PREFIX.length))
            : axis(1),
        ),
      };
    }
    const behaviour = this.generation;
    if (behaviour.kind === "fail") throw new Error("AI generation upstream error 503");
    const encoder = new TextEncoder();
    const pieces = [...behaviour.pieces];
    return new ReadableStream<Uint8Array>({
      pull(controller) {
        const piece = pieces.shift();
        if (piece !== undefined)
          controller.enqueue(encoder.encode(`data: ${JSON.stringify({ response: piece })}\n\n`));
        else if (behaviour.kind === "partial") controller.error(new Error("stream reset by peer"));
        else {
          controller.enqueue(encoder.encode("data: [DONE]\n\n"));
          controller.close();
        }
      },
    });
  }
}

function isGuardModel(model: string): boolean {
  return model.includes("llama-guard");
}

/** A unit vector whose first component is `first` (so its cosine with axis(1) is `first`). */
export function axis(first: number): number[] {
  const vector = new Array<number>(DIMENSIONS).fill(0);
  vector[0] = first;
  vector[1] = Math.sqrt(Math.max(0, 1 - first * first));
  return vector;
}

function distinctQuery(question: string): number[] {
  let hash = 0;
  for (const ch of question) hash = (Math.imul(hash, 31) + ch.charCodeAt(0)) >>> 0;
  const vector = new Array<number>(DIMENSIONS).fill(0);
  vector[0] = 0.95;
  vector[2 + (hash % (DIMENSIONS - 2))] = Math.sqrt(1 - 0.95 * 0.95);
  return vector;
}

export class FakeVectorize implements VectorizeLike {
  readonly vectors = new Map<string, { values: number[]; metadata?: Record<string, string> }>();

  async upsert(vectors: { id: string; values: number[]; metadata?: Record<string, string> }[]) {
    for (const vector of vectors)
      this.vectors.set(vector.id, { values: vector.values, metadata: vector.metadata });
    return { mutationId: "m" };
  }

  async deleteByIds(ids: string[]) {
    for (const id of ids) this.vectors.delete(id);
    return { mutationId: "m" };
  }

  async query(vector: number[], options: { topK: number }) {
    const matches = [...this.vectors.entries()]
      .map(([id, stored]) => ({ id, score: cosine(vector, stored.values) }))
      .sort((a, b) => b.score - a.score)
      .slice(0, options.topK);
    return { matches, count: matches.length };
  }
}

/**
 * A local Sanity-compatible query API: GET /v<version>/data/query/<dataset>?query=<GROQ>,
 * answering `{result: [...]}` for `*[_type == "<type>"]` queries.
 */
export class FakeCms {
  readonly requests: { url: string; authorization: string | null }[] = [];
  status = 200;
  content: PortfolioContent;
  private readonly app = new Hono();

  constructor(
    content: PortfolioContent,
    readonly expected: { projectId: string; dataset: string; token: string },
  ) {
    this.content = structuredClone(content);
    this.app.get("/:version/data/query/:dataset", (c) => {
      if (c.req.header("authorization") !== `Bearer ${this.expected.token}`)
        return c.json({ error: "Unauthorized" }, 401);
      if (c.req.param("dataset") !== this.expected.dataset)
        return c.json({ error: "no dataset" }, 404);
      if (this.status !== 200) return c.json({ error: "boom" }, this.status as 500);
      const type = /_type == "(\w+)"/.exec(c.req.query("query") ?? "")?.[1];
      const byType: Record<string, unknown[]> = {
        project: this.content.projects,
        testimonial: this.content.testimonials,
        resume: this.content.resumes,
        profile: this.content.profiles,
        recommendation: this.content.recommendations,
      };
      return c.json({ ms: 1, query: c.req.query("query"), result: byType[type ?? ""] ?? [] });
    });
  }

  fetch = async (request: Request): Promise<Response> => {
    this.requests.push({ url: request.url, authorization: request.headers.get("authorization") });
    const url = new URL(request.url);
    if (url.hostname !== `${this.expected.projectId}.api.sanity.io`)
      return new Response("unknown host", { status: 502 });
    return this.app.fetch(request);
  };
}
