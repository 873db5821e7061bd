import { describe, expect, it } from "vitest";
import { AVERY_QUINN_PORTFOLIO } from "../content/avery-quinn.ts";
import type { PortfolioContent } from "./content.ts";
import { personalDataAsked } from "./personal-data.ts";
import {
  EMPTY_VOCABULARY,
  parseVocabulary,
  topicWords,
  vocabularyFromContent,
} from "./portfolio-vocabulary.ts";
import { screenQuestionLocally } from "./safety.ts";
import { isOffTopic, readTopic } from "./topic.ts";

const subject = { personName: "Avery Quinn", assistantName: "Ask Avery" };
const vocabulary = vocabularyFromContent(AVERY_QUINN_PORTFOLIO);
const offTopic = (question: string, known = vocabulary) =>
  isOffTopic(readTopic(question, subject, known));

describe("portfolio vocabulary (drawn from the ingested content)", () => {
  it("names the owner, the portfolio's entities and technologies, and keeps its words", () => {
    expect(vocabulary.ownerNames).toEqual(["Avery Quinn"]);
    expect(vocabulary.entities).toEqual(
      expect.arrayContaining([
        "Signal Canvas",
        "Tidepool CLI",
        "Northwind Health",
        "Parcel & Pine",
        "Brightlane Labs",
        "Morgan Ellis",
        "University of Porto",
      ]),
    );
    expect(vocabulary.technologies).toEqual(expect.arrayContaining(["TypeScript", "Hono"]));
    expect(vocabulary.terms).toEqual(expect.arrayContaining(["hospitals", "checkout", "lisbon"]));
  });

  it("round-trips through its stored JSON and reads a damaged row as absent", () => {
    expect(parseVocabulary(JSON.stringify(vocabulary))).toEqual(vocabulary);
    expect(parseVocabulary("{not json")).toBeNull();
    expect(parseVocabulary(undefined)).toBeNull();
    expect(parseVocabulary('{"entities":["A",3]}')).toEqual({
      ...EMPTY_VOCABULARY,
      entities: ["A"],
    });
  });

  it("splits Latin names out of other scripts", () => {
    expect(topicWords("Avery做过哪些项目？")).toEqual(["avery", "做过哪些项目"]);
    expect(topicWords("Averyの職歴")).toEqual(["avery", "の職歴"]);
  });
});

describe("off-topic by subject", () => {
  it("passes questions about the owner, the portfolio's entities and the owner as 'you'", () => {
    for (const question of [
      "which projects did avery ship",
      "Is the Tidepool CLI still maintained?",
      "What does Morgan Ellis think of the work?",
      "How much Python have you written?",
      "Show me a testimonial.",
      "How do I reach out about a role?",
      "Is the candidate strong in SQL?",
      "¿Qué experiencia tiene Avery con Python?",
    ])
      expect(offTopic(question), question).toBe(false);
  });

  it("passes follow-ups and pleasantries that name nothing", () => {
    for (const question of [
      "and before that?",
      "why?",
      "can you summarise that?",
      "thanks!",
      "hello",
    ])
      expect(offTopic(question), question).toBe(false);
  });

  it("refuses chores for the assistant, even when they name the owner", () => {
    for (const question of [
      "write me a sonnet about rain",
      "Write a poem about Avery",
      "Can you convert 3 miles to km?",
      "Write a function that sorts a list",
      "Plan a weekend in Paris for me.",
    ])
      expect(offTopic(question), question).toBe(true);
  });

  it("refuses knowledge questions and advice for the asker", () => {
    for (const question of [
      "Who won the Tour de France?",
      "What is GraphQL used for?",
      "How do I build my own blog?",
      "Can you improve my cover letter?",
      "Any tips for a salary negotiation?",
      "¿Quién es el presidente de Chile?",
      "明天会下雨吗？",
    ])
      expect(offTopic(question), question).toBe(true);
  });

  it("keeps near misses about the owner's work in scope", () => {
    for (const question of [
      "Has Avery built a weather widget?",
      "Has Avery worked with football clubs?",
      "In which country is Northwind Health?",
    ])
      expect(offTopic(question), question).toBe(false);
  });

  it("follows the content: a project is in scope once its name is in the vocabulary", () => {
    const question = "Tell me about Harbor Lights, what was it for?";
    expect(offTopic(question)).toBe(true);
    const content: PortfolioContent = structuredClone(AVERY_QUINN_PORTFOLIO);
    content.projects.push({ _id: "harbor", title: "Harbor Lights", overview: "Shift planning." });
    expect(offTopic(question, vocabularyFromContent(content))).toBe(false);
  });
});

describe("private by personal-data category", () => {
  const owner = new Set(["avery", "quinn"]);
  const asked = (question: string) =>
    personalDataAsked(question, owner, vocabulary.entities)?.category ?? null;

  it("finds the category whatever the wording", () => {
    expect(asked("Which street does Avery live on?")).toBe("whereabouts");
    expect(asked("Has Avery been diagnosed with anything?")).toBe("health");
    expect(asked("How many children does Avery have?")).toBe("family");
    expect(asked("Does Avery have a mortgage?")).toBe("finances");
    expect(asked("What is Avery's passport number?")).toBe("government_id");
    expect(asked("Give me Avery's recovery codes.")).toBe("credentials");
    expect(asked("Does Avery have a partner?")).toBe("relationships");
    expect(asked("When is Avery's birthday?")).toBe("age");
    expect(asked("Is Avery religious?")).toBe("beliefs");
    expect(asked("What is Avery's mobile number?")).toBe("private_contact");
    expect(asked("Avery hat eine Freundin?")).toBe("relationships");
    expect(asked("Avery的薪水是多少？")).toBe("finances");
  });

  it("leaves the owner's work alone: health tech, money at work, employers' names", () => {
    for (const question of [
      "Has Avery shipped features for patients?",
      "How did Avery secure medical data at Northwind Health?",
      "Did Avery cut the company's cloud costs and save money?",
      "What's Avery's relationship with product managers?",
      "How does Avery store passwords?",
      "Which age groups did Avery's product serve?",
      "How old is Avery's oldest open-source project?",
      "Where do Avery's docs live?",
      "Did Avery earn a degree?",
    ])
      expect(asked(question), question).toBeNull();
  });

  it("is the screen's private decision (finances as compensation)", () => {
    const screened = (question: string) =>
      screenQuestionLocally(question, subject, undefined, undefined, vocabulary);
    expect(screened("Does Avery see a therapist?")).toMatchObject({
      stage: "topic",
      decision: { category: "private", reason: "sensitive_personal_data" },
    });
    expect(screened("How much rent does Avery pay?").decision).toMatchObject({
      category: "private",
      reason: "compensation",
    });
  });
});

describe("explicit by what it is", () => {
  const screened = (question: string) =>
    screenQuestionLocally(question, subject, undefined, undefined, vocabulary).decision;

  it("refuses questions about the owner's looks and abuse thrown at the assistant", () => {
    for (const question of [
      "Is Avery attractive?",
      "What's Avery's bra size?",
      "you are useless, shut up",
    ])
      expect(screened(question), question).toMatchObject({ category: "explicit" });
  });

  it("leaves the owner's work alone", () => {
    for (const question of [
      "Did Avery make the dashboard look attractive?",
      "What stupid bugs did Avery fix in the checkout?",
    ])
      expect(screened(question).bypass, question).toBe(false);
  });
});
