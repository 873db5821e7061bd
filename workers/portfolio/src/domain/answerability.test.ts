import { describe, expect, it } from "vitest";
import { AVERY_QUINN_PORTFOLIO } from "../content/avery-quinn.ts";
import { checkAnswerability, keyTerms, questionType } from "./answerability.ts";
import { chunkDocument } from "./chunking.ts";
import { buildDocuments } from "./documents.ts";

const chunks = buildDocuments(AVERY_QUINN_PORTFOLIO).flatMap((doc) => chunkDocument(doc, 500, 50));
const person = new Set(["avery", "quinn"]);
const check = (question: string) => checkAnswerability(question, chunks, person);

describe("question types", () => {
  it.each([
    ["When did Avery start at Northwind Health?", "when"],
    ["What year did Avery graduate?", "when"],
    ["How long was Avery at Brightlane Labs?", "duration"],
    ["How many hospitals use Signal Canvas?", "count"],
    ["By how much did conversion rise?", "count"],
    ["Who said Avery is patient?", "who_said"],
    ["Who described working with Avery as a joy?", "who_said"],
    ["Who is Morgan Ellis?", "who"],
    ["Where is Avery based?", "where"],
    ["Has Avery used Kubernetes?", "yes_no"],
    ["Why did Avery leave Brightlane Labs?", "why"],
    ["What is Signal Canvas?", "what"],
  ])("%s -> %s", (question, type) => {
    expect(questionType(question)).toBe(type);
  });
});

describe("key terms", () => {
  it("drops frame words and the person's name, keeps named things with their own words", () => {
    expect(keyTerms("Which database did Avery use at Brightlane Labs?", person)).toEqual([
      { term: "brightlane", surface: "Brightlane Labs" },
      { term: "lab", surface: "Brightlane Labs" },
    ]);
    expect(keyTerms("Has Avery deployed to Google Cloud?", person).map((k) => k.surface)).toContain(
      "Google Cloud",
    );
    expect(keyTerms("What was Avery's role at Parcel & Pine?", person)[0]!.surface).toBe(
      "Parcel & Pine",
    );
  });

  it("start/join/leave frame a when-question but are the point of a why-question", () => {
    expect(keyTerms("When did Avery leave Parcel & Pine?", person).map((k) => k.term)).toEqual([
      "parcel",
      "pine",
    ]);
    expect(keyTerms("Why did Avery leave Parcel & Pine?", person).map((k) => k.term)).toContain(
      "leave",
    );
  });
});

describe("answerability against the development portfolio", () => {
  it.each([
    "What did Avery do at Brightlane Labs?",
    "When did Avery join Parcel & Pine?",
    "Where did Avery work in 2017?",
    "How many engineers did Avery mentor at Northwind Health?",
    "Which testing tools does Avery use?",
    "Is Avery open to remote work?",
    "What did Priya Raman say about Avery?",
  ])("answerable: %s", (question) => {
    expect(check(question)).toMatchObject({ answerable: true });
  });

  it("a technology the portfolio never mentions is entity_not_found, named as asked", () => {
    expect(check("Has Avery used Kubernetes?")).toMatchObject({
      answerable: false,
      reason: "entity_not_found",
      missing: [expect.objectContaining({ surface: "Kubernetes" })],
    });
  });

  it("terms must meet in one item: Go and Northwind Health both exist, never together", () => {
    const decision = check("Did Avery use Go at Northwind Health?");
    expect(decision).toMatchObject({ answerable: false, reason: "entity_not_found" });
    if (decision.answerable) return;
    expect(decision.missing.map((k) => k.surface)).toEqual(["Go"]);
    expect(decision.found.map((k) => k.surface)).toContain("Northwind Health");
  });

  it("the item must hold the kind of fact asked for", () => {
    expect(check("When was Ask Avery launched?")).toMatchObject({
      answerable: false,
      reason: "answer_type_not_found",
    });
    expect(check("How many people worked at Brightlane Labs?")).toMatchObject({
      answerable: false,
    });
  });

  it("a testimonial author's job title is not evidence about the person", () => {
    expect(check("Is Avery a manager?")).toMatchObject({ answerable: false });
    expect(check("Who is Morgan Ellis?")).toMatchObject({ answerable: true });
  });

  it("a number the portfolio does not state is not supported", () => {
    expect(check("Did Avery mentor 10 engineers at Northwind Health?")).toMatchObject({
      answerable: false,
    });
  });
});

describe("compounds and numbers", () => {
  it("'open source' is one term: Tidepool is, Ask Avery (a 'source id') is not", () => {
    expect(check("Is Tidepool open source?")).toMatchObject({ answerable: true });
    expect(check("Is Ask Avery open source?")).toMatchObject({
      answerable: false,
      reason: "entity_not_found",
    });
  });

  it("'20,000' does not support a question about 20", () => {
    expect(check("Did Avery lead a team of 20 engineers?")).toMatchObject({ answerable: false });
    expect(check("Does Signal Canvas handle 20,000 events per second?")).toMatchObject({
      answerable: true,
    });
  });

  it("single digits count, number words meet digits, '1.2' is not '1'", () => {
    expect(check("Did Avery cut load time to 1 second?")).toMatchObject({ answerable: false });
    expect(check("Did Avery lead a team of 5 engineers?")).toMatchObject({ answerable: true });
  });

  it("'Who is Avery's manager?' is not answered by a colleague's job title", () => {
    expect(check("Who is Avery's manager?")).toMatchObject({ answerable: false });
  });
});

describe("what the portfolio only counts, orders or half-names", () => {
  it("'Which hospitals…' asks for names; '40 hospitals' only gives a count", () => {
    expect(check("Which hospitals use Signal Canvas?")).toMatchObject({
      answerable: false,
      reason: "answer_type_not_found",
      type: "names",
    });
    expect(check("How many hospitals use Signal Canvas?")).toMatchObject({ answerable: true });
  });

  it("order words frame job questions only", () => {
    expect(check("Who was Avery's first employer?")).toMatchObject({ answerable: true });
    expect(check("What was Avery's first programming language?")).toMatchObject({
      answerable: false,
    });
  });

  it("a question word may extend a portfolio word, not the reverse ('intern' is not 'internal')", () => {
    expect(check("Did Avery intern at Brightlane Labs?")).toMatchObject({ answerable: false });
    expect(check("Did Avery work on healthcare products?")).toMatchObject({ answerable: true });
  });
});

describe("a relation, not just two words", () => {
  it.each([
    "Did Avery graduate in 2018?",
    "Is Avery based in Porto?",
    "Did Avery use Kafka at Parcel & Pine?",
    "Did Priya Raman work at Northwind Health?",
  ])("%s -> not answerable", (question) => {
    expect(check(question)).toMatchObject({ answerable: false });
  });

  it.each([
    "Did Avery graduate in 2016?",
    "Is Avery based in Lisbon?",
    "Which country is Avery in?",
  ])("%s -> answerable", (question) => {
    expect(check(question)).toMatchObject({ answerable: true });
  });
});
