/**
 * The answer evaluation's scoring and its remote (Workers AI REST) client:
 * what counts as a fact, a decline and a false answer; and that --remote
 * without an account is a clear skip, never a network call.
 */
import { describe, expect, it } from "vitest";
import {
  type AnswerQuestion,
  containsFact,
  isDecline,
  normalizeForMatch,
  scoreOutcome,
  summarize,
} from "../eval/lib/answer-scoring.ts";
import { RestAiRunner, remoteAccount } from "../eval/lib/rest-ai.ts";
import { notInPortfolioAnswer } from "../src/domain/answers.ts";
import { DEV_PERSONA } from "../src/domain/settings.ts";

const fact = (answer: string[][]): AnswerQuestion => ({
  id: "q",
  family: "f",
  kind: "date",
  question: "When?",
  answer,
});
const notStated: AnswerQuestion = { ...fact([]), kind: "absent_detail", answer: "not_stated" };

describe("answer scoring", () => {
  it("normalises case, punctuation and '&' for whole-word matching", () => {
    expect(normalizeForMatch("Parcel & Pine, 20,000!")).toBe(" parcel and pine 20 000 ");
    expect(containsFact("Worked at Parcel & Pine.", ["parcel and pine"])).toBe(true);
    expect(containsFact("Written in Go.", ["go"])).toBe(true);
    expect(containsFact("Uses Google.", ["go"])).toBe(false);
  });

  it("a fact answer needs every fact (any alternative) and must not be a decline", () => {
    expect(scoreOutcome(fact([["2016"], ["2018"]]), "From 2016 to 2018.").correct).toBe(true);
    expect(scoreOutcome(fact([["2016"], ["2018"]]), "Since 2016.").missing).toEqual(["2018"]);
    expect(
      scoreOutcome(fact([["2016"]]), "The portfolio doesn't mention that. It lists 2016.").correct,
    ).toBe(false);
  });

  it("a not-stated question is right only when declined; anything else is a false answer", () => {
    const decline = notInPortfolioAnswer(
      "Has Avery used Kubernetes?",
      {
        reason: "entity_not_found",
        type: "yes_no",
        missing: [{ surface: "Kubernetes" }],
        found: [],
      },
      [],
      DEV_PERSONA,
    );
    expect(isDecline(decline)).toBe(true);
    expect(isDecline("Led the engineering of Signal Canvas.")).toBe(false);
    const report = summarize([
      scoreOutcome(notStated, decline),
      scoreOutcome(notStated, "Led the engineering of Signal Canvas."),
      scoreOutcome(fact([["2021"]]), "Since 2021."),
    ]);
    expect(report).toMatchObject({
      factQuestions: 1,
      factAccuracy: 1,
      notStated: 2,
      falseAnswers: 1,
      falseAnswerRate: 0.5,
    });
  });
});

describe("eval:answers --remote", () => {
  it("without an account it names the missing variables (the script then skips)", () => {
    expect(remoteAccount({})).toEqual({
      missing: ["CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_API_TOKEN"],
    });
    expect(remoteAccount({ CLOUDFLARE_ACCOUNT_ID: "a", CLOUDFLARE_API_TOKEN: "t" })).toEqual({
      accountId: "a",
      apiToken: "t",
    });
  });

  it("calls Workers AI's REST endpoint and answers repeated inputs from memory", async () => {
    const requests: { url: string; init: RequestInit }[] = [];
    const fakeFetch = (async (url: string, init: RequestInit) => {
      requests.push({ url, init });
      return Response.json({ success: true, result: { shape: [1, 2], data: [[0.6, 0.8]] } });
    }) as unknown as typeof fetch;
    const runner = new RestAiRunner("acct", "secret", fakeFetch);
    const inputs = { text: ["hello"], pooling: "cls" };
    expect(await runner.run("@cf/baai/bge-base-en-v1.5", inputs)).toEqual({
      shape: [1, 2],
      data: [[0.6, 0.8]],
    });
    await runner.run("@cf/baai/bge-base-en-v1.5", inputs);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.url).toBe(
      "https://api.cloudflare.com/client/v4/accounts/acct/ai/run/@cf/baai/bge-base-en-v1.5",
    );
    expect(new Headers(requests[0]!.init.headers).get("Authorization")).toBe("Bearer secret");
  });

  it("an API error is an error naming the model", async () => {
    const failing = (async () =>
      Response.json(
        { success: false, errors: [{ message: "bad token" }] },
        { status: 401 },
      )) as unknown as typeof fetch;
    await expect(new RestAiRunner("a", "t", failing).run("@cf/x", {})).rejects.toThrow(
      /Workers AI @cf\/x failed \(401\): bad token/,
    );
  });
});
