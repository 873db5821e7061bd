import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { AVERY_QUINN_PORTFOLIO } from "../src/content/avery-quinn.ts";
import { axis, FakeAi, FakeCms, FakeVectorize } from "./fakes.ts";
import { ask, call, chat, counted, errorOf, readSse, TOKEN } from "./helpers.ts";

/**
 * The production configuration: Workers AI (embeddings + streamed
 * generation), Vectorize and a Sanity-compatible CMS, each replaced by a
 * fake speaking the real wire format. DEV_MODE is off, as in production.
 */

const CMS = { projectId: "avery-cms", dataset: "portfolio", token: "cms-read-token" };

let ai: FakeAi;
let vectorize: FakeVectorize;
let cms: FakeCms;
let overrides: Record<string, unknown>;

async function clearStore() {
  const db = (env as unknown as { DB: D1Database }).DB;
  await db.batch([
    db.prepare("DELETE FROM knowledge_chunks"),
    db.prepare("DELETE FROM chunk_vectors"),
    db.prepare("DELETE FROM content_state"),
    db.prepare("UPDATE response_cache SET invalidated_at = 1 WHERE invalidated_at IS NULL"),
  ]);
}

async function ingest(extra: Record<string, unknown> = {}) {
  return call(
    `/v1/ingest?token=${TOKEN}`,
    { method: "POST", body: '{"_id":"ignored"}' },
    { ...overrides, ...extra },
  );
}

beforeEach(async () => {
  await clearStore();
  ai = new FakeAi();
  vectorize = new FakeVectorize();
  cms = new FakeCms(AVERY_QUINN_PORTFOLIO, CMS);
  overrides = {
    DEV_MODE: "false",
    AI: ai,
    VECTORIZE: vectorize,
    CMS_HTTP: cms,
    SANITY_PROJECT_ID: CMS.projectId,
    SANITY_DATASET: CMS.dataset,
    SANITY_API_TOKEN: CMS.token,
  };
});

describe("CMS ingestion (POST /v1/ingest against a fake Sanity API)", () => {
  it("queries the configured project, dataset and API version with the token", async () => {
    const response = await ingest();
    expect(response.status).toBe(200);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ status: "ok", mode: "cms", chunks_removed: 0 });
    expect(body.chunks_ingested).toBe(body.chunks_embedded);
    expect(body.sources).toEqual({ resume: 7, project: 10, testimonial: 2, profile: 4 });
    expect(cms.requests.length).toBe(5);
    for (const request of cms.requests) {
      const url = new URL(request.url);
      expect(url.origin).toBe("https://avery-cms.api.sanity.io");
      expect(url.pathname).toBe("/v2024-01-01/data/query/portfolio");
      expect(url.searchParams.get("query")).toMatch(
        /^\*\[_type == "\w+"\] \| order\(_createdAt desc\)/,
      );
      expect(request.authorization).toBe(`Bearer ${CMS.token}`);
    }
    expect(vectorize.vectors.size).toBe(body.chunks_ingested);
    const embedCall = ai.calls.find((entry) => Array.isArray(entry.inputs.text))!;
    expect(embedCall.model).toBe("@cf/baai/bge-base-en-v1.5");
  });

  it("upserts by source id: unchanged content is not re-embedded, edits are, deleted sources are removed", async () => {
    const first = (await (await ingest()).json()) as Record<string, number>;
    const again = (await (await ingest()).json()) as Record<string, number>;
    expect(again).toMatchObject({
      chunks_ingested: first.chunks_ingested,
      chunks_embedded: 0,
      chunks_removed: 0,
    });

    cms.content.projects[0]!.overview = "A rewritten overview of the portfolio assistant.";
    cms.content.projects = cms.content.projects.filter(
      (project) => project._id !== "project-tidepool-cli",
    );
    const edited = (await (await ingest()).json()) as Record<string, number>;
    // Tidepool had overview, contributions and links.
    expect(edited.chunks_removed).toBe(3);
    expect(edited.chunks_embedded).toBe(1);
    expect(edited.chunks_ingested).toBe(first.chunks_ingested! - 3);
    expect([...vectorize.vectors.keys()].some((id) => id.startsWith("project-tidepool-cli"))).toBe(
      false,
    );
    const db = (env as unknown as { DB: D1Database }).DB;
    const stored = await db
      .prepare("SELECT content FROM knowledge_chunks WHERE id = 'project-ask-avery#overview:0'")
      .first<{ content: string }>();
    expect(stored?.content).toContain("A rewritten overview");
    const tidepool = await db
      .prepare("SELECT COUNT(*) AS n FROM knowledge_chunks WHERE item_id = 'project-tidepool-cli'")
      .first<{ n: number }>();
    expect(tidepool?.n).toBe(0);
  });

  it("token: query parameter only, constant-time compared", async () => {
    const missing = await call(
      "/v1/ingest",
      { method: "POST", headers: { Authorization: `Bearer ${TOKEN}` } },
      overrides,
    );
    expect(missing.status).toBe(401);
    expect((await errorOf(missing)).type).toBe("MISSING_TOKEN");
    const empty = await call("/v1/ingest?token=", { method: "POST" }, overrides);
    expect((await errorOf(empty)).type).toBe("MISSING_TOKEN");
    const wrong = await call("/v1/ingest?token=wrong", { method: "POST" }, overrides);
    expect(wrong.status).toBe(401);
    expect((await errorOf(wrong)).type).toBe("INVALID_TOKEN");
    expect(cms.requests).toHaveLength(0);
  });

  it("a failing CMS is 503 SERVICE_UNAVAILABLE and leaves the stored chunks alone", async () => {
    await ingest();
    const before = vectorize.vectors.size;
    cms.status = 500;
    const response = await ingest();
    expect(response.status).toBe(503);
    expect(await errorOf(response)).toMatchObject({ type: "SERVICE_UNAVAILABLE", code: 503 });
    expect(vectorize.vectors.size).toBe(before);
  });

  it("an embedding failure during ingestion is 500 INGESTION_FAILED", async () => {
    ai.failEmbeddings = true;
    const response = await ingest();
    expect(response.status).toBe(500);
    expect((await errorOf(response)).type).toBe("INGESTION_FAILED");
  });

  it("no CMS configured outside development mode: 503; no database: 503 (dev: the dev body)", async () => {
    const noCms = await ingest({ SANITY_PROJECT_ID: "" });
    expect(noCms.status).toBe(503);
    expect((await errorOf(noCms)).type).toBe("SERVICE_UNAVAILABLE");
    const noDb = await ingest({ DB: undefined });
    expect((await errorOf(noDb)).type).toBe("SERVICE_UNAVAILABLE");
    const devNoDb = await call(`/v1/ingest?token=${TOKEN}`, { method: "POST" }, { DB: undefined });
    expect(await devNoDb.json()).toEqual({
      status: "ok",
      mode: "dev",
      chunks_ingested: 0,
      cache_invalidated: 0,
    });
  });

  it("development mode ingests the built-in portfolio and reports it", async () => {
    const response = await call(`/v1/ingest?token=${TOKEN}`, { method: "POST" });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: "ok", mode: "dev", chunks_ingested: 23 });
  });
});

describe("chat with Workers AI and Vectorize", () => {
  it("streams the model's deltas as tokens and names the sources", async () => {
    await ingest();
    const answer = await ask("What projects has Avery built?", {}, { overrides });
    expect(answer.events.slice(0, -1)).toEqual([
      { type: "token", content: "Avery " },
      { type: "token", content: "built " },
      { type: "token", content: "Signal " },
      { type: "token", content: "Canvas." },
    ]);
    expect(answer.done.sources.length).toBeGreaterThan(0);
    const generation = ai.generationCalls[0]!;
    expect(generation.model).toBe("@cf/meta/llama-3.1-8b-instruct");
    expect(generation.inputs).toMatchObject({ stream: true, max_tokens: 1024, temperature: 0.1 });
    const messages = generation.inputs.messages as { role: string; content: string }[];
    expect(messages[0]!.role).toBe("system");
    expect(messages[0]!.content).toContain("--- CONTEXT ---");
    expect(messages[0]!.content).toContain('"Ask Avery", the AI assistant on Avery Quinn');
    expect(messages[0]!.content).toContain(
      "say plainly that the portfolio does not mention it, naming it",
    );
    expect(messages.at(-1)).toEqual({ role: "user", content: "What projects has Avery built?" });
  });

  it("history: the last 6 messages of the session, oldest first, in a stable order", async () => {
    await ingest();
    const session = "history-session";
    // Real questions: the answerability check declines ones about things the portfolio lacks.
    const questions = [
      "What projects has Avery built?",
      "Which projects did Avery build?",
      "Tell me about Avery's projects",
      "What has Avery built?",
      "What projects did Avery make?",
    ];
    const replies = ["First answer.", "Second answer.", "Third answer.", "Fourth answer."];
    for (const [i, reply] of replies.entries()) {
      ai.generation = { kind: "answer", pieces: [reply] };
      await ask(questions[i]!, { session_id: session, use_cache: false }, { overrides });
    }
    ai.generation = { kind: "answer", pieces: ["Fifth answer."] };
    await ask(questions[4]!, { session_id: session, use_cache: false }, { overrides });
    const messages = ai.generationCalls.at(-1)!.inputs.messages as {
      role: string;
      content: string;
    }[];
    expect(messages.slice(1)).toEqual([
      { role: "user", content: questions[1] },
      { role: "assistant", content: "Second answer." },
      { role: "user", content: questions[2] },
      { role: "assistant", content: "Third answer." },
      { role: "user", content: questions[3] },
      { role: "assistant", content: "Fourth answer." },
      { role: "user", content: questions[4] },
    ]);
    // Another session starts without history.
    await ask(
      "Which projects has Avery worked on?",
      { session_id: "other", use_cache: false },
      { overrides },
    );
    expect((ai.generationCalls.at(-1)!.inputs.messages as unknown[]).length).toBe(2);
  });

  it("answers that depended on session history are not cached", async () => {
    await ingest();
    const session = "cache-history";
    await ask("What projects has Avery built?", { session_id: session }, { overrides });
    await ask("Which projects did Avery build?", { session_id: session }, { overrides });
    const again = await ask("Which projects did Avery build?", {}, { overrides });
    expect(again.done.cached).toBe(false);
    const opening = await ask("What projects has Avery built?", {}, { overrides });
    expect(opening.done.cached).toBe(true);
  });

  it("a generation failure becomes a grounded fallback answer from the retrieved context", async () => {
    await ingest();
    ai.generation = { kind: "fail" };
    let answer: Awaited<ReturnType<typeof ask>> | undefined;
    const counters = await counted(async () => {
      answer = await ask("Tell me about Signal Canvas", {}, { overrides });
    }, overrides);
    expect(answer!.text).toContain("clinical analytics dashboard");
    expect(answer!.done.cached).toBe(false);
    expect(counters.fallback_reasons).toEqual({ generation_failure: 1 });
    expect(counters.response_routes).toEqual({ error_fallback: 1 });
    // Fallbacks are not cached.
    ai.generation = { kind: "answer", pieces: ["Fresh."] };
    expect((await ask("Tell me about Signal Canvas", {}, { overrides })).done.cached).toBe(false);
  });

  it("a stream that breaks mid-answer keeps the partial text and declines to guess further", async () => {
    await ingest();
    ai.generation = { kind: "partial", pieces: ["Avery led ", "Signal Canvas"] };
    const answer = await ask("Tell me about Signal Canvas", {}, { overrides });
    expect(answer.text).toBe(
      "Avery led Signal Canvas I can't verify anything beyond that, so I'll stop here rather than guess.",
    );
  });

  it("an embedding failure is a pipeline_failure fallback, still 200", async () => {
    await ingest();
    ai.failEmbeddings = true;
    let status = 0;
    let text = "";
    const counters = await counted(async () => {
      const response = await chat(
        { question: "What projects has Avery built?", session_id: "s", use_cache: false },
        { overrides },
      );
      status = response.status;
      // The pipeline runs as the stream is read.
      text = (await readSse(response)).text;
    }, overrides);
    expect(status).toBe(200);
    expect(text).toContain("won't guess");
    expect(counters.fallback_reasons).toEqual({ pipeline_failure: 1 });
  });

  it.each([
    ["low_similarity", 0.3, "don't have enough verified portfolio information"],
    ["low_term_coverage", 0.6, "don't have enough verified portfolio information"],
  ])(
    "gate reason %s (similarity %s, no overlapping terms)",
    async (reason, similarity, expected) => {
      await ingest();
      ai.queryVector = () => axis(similarity);
      let answer: Awaited<ReturnType<typeof ask>> | undefined;
      const counters = await counted(async () => {
        answer = await ask("Has Avery ever kept bees?", { use_cache: false }, { overrides });
      }, overrides);
      expect(answer!.text).toContain(expected);
      expect(counters.retrieval_gate_reasons).toEqual({ [reason]: 1 });
      expect(ai.generationCalls).toHaveLength(0);
    },
  );

  it("a strong semantic match (>= 0.72) needs no term overlap", async () => {
    await ingest();
    ai.queryVector = () => axis(0.8);
    const counters = await counted(async () => {
      await ask("What has Avery shipped?", { use_cache: false }, { overrides });
    }, overrides);
    expect(counters.response_routes).toEqual({ llm: 1 });
  });

  it.each([
    [
      "Has Avery used Kubernetes?",
      "entity_not_found",
      /^No, not according to the portfolio: the portfolio doesn't mention Kubernetes\./,
    ],
    [
      "Did Avery ever work at Google?",
      "entity_not_found",
      /doesn't mention Google\. The companies it lists are .*Northwind Health/,
    ],
    ["When was Ask Avery launched?", "answer_type_not_found", /doesn't give a date for Ask Avery/],
  ])(
    "answerability before the model call: %s -> %s, the model is not called",
    async (question, reason, expected) => {
      await ingest();
      // A strong semantic match (0.8) passes the similarity gate; the evidence still lacks the thing.
      ai.queryVector = () => axis(0.8);
      let answer: Awaited<ReturnType<typeof ask>> | undefined;
      const counters = await counted(async () => {
        answer = await ask(question, { use_cache: false }, { overrides });
      }, overrides);
      expect(answer!.text).toMatch(expected);
      expect(answer!.done.sources).toEqual([]);
      expect(counters.retrieval_gate_reasons).toEqual({ [reason]: 1 });
      expect(counters.response_routes).toEqual({ confidence_fallback: 1 });
      expect(ai.generationCalls).toHaveLength(0);
    },
  );

  it("empty_results when nothing is ingested", async () => {
    const counters = await counted(async () => {
      await ask("What projects has Avery built?", { use_cache: false }, { overrides });
    }, overrides);
    expect(counters.retrieval_gate_reasons).toEqual({ empty_results: 1 });
  });
});
