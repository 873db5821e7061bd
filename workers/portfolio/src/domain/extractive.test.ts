import { describe, expect, it } from "vitest";
import { AVERY_QUINN_PORTFOLIO } from "../content/avery-quinn.ts";
import { chunkDocument } from "./chunking.ts";
import { buildDocuments } from "./documents.ts";
import { extractiveAnswer } from "./extractive.ts";
import { buildMessages, parseContext } from "./prompt.ts";
import { DEV_PERSONA } from "./settings.ts";
import { wordPieces } from "./text.ts";

const chunks = [
  {
    source: "project",
    title: "Atlas",
    content:
      "Project: Atlas\nEvidence Type: project\nRole: Lead\nCompany: Acme\nTechnologies: FastAPI, PostgreSQL\n\nOverview: Atlas is a search service.",
  },
  {
    source: "resume",
    title: "Resume: Summary",
    content: "Resume Section: Summary\nEngineer with 8+ years of experience in Python.",
  },
  {
    source: "testimonial",
    title: "Testimonial",
    content: 'From: Dana Cole\nRole: Manager\nTestimonial: "Avery is great."',
  },
];

describe("extractive answers come only from the context", () => {
  it("round-trips the context block through the prompt", () => {
    const [system] = buildMessages(DEV_PERSONA, true, chunks, [], "q");
    const parsed = parseContext(system!.content);
    expect(parsed.map((chunk) => [chunk.source, chunk.title])).toEqual([
      ["project", "Atlas"],
      ["resume", "Resume: Summary"],
      ["testimonial", "Testimonial"],
    ]);
    expect(parsed[0]!.content).toBe(chunks[0]!.content);
  });

  it.each([
    ["What projects has Avery built?", ["Atlas", "FastAPI"]],
    ["How many years of experience does Avery have?", ["8+ years of experience"]],
    ["What do colleagues say?", ["Dana Cole", '"Avery is great."']],
    ["Tell me about Atlas", ["Atlas is a search service.", "Lead at Acme"]],
    ["How can I contact Avery?", ["avery.quinn@example.dev"]],
  ])("%s", (question, expected) => {
    const answer = extractiveAnswer(question, chunks, DEV_PERSONA)!;
    for (const fragment of expected) expect(answer).toContain(fragment);
  });

  it("returns null without context", () => {
    expect(extractiveAnswer("What projects?", [], DEV_PERSONA)).toBeNull();
  });

  it("word pieces rebuild the text exactly", () => {
    const text = "  Hello,  world!\nNext line ";
    expect(wordPieces(text).join("")).toBe(text);
  });
});

describe("extractive answers by question type (development portfolio)", () => {
  const all = buildDocuments(AVERY_QUINN_PORTFOLIO).flatMap((doc) => chunkDocument(doc, 500, 50));
  const answer = (question: string) => extractiveAnswer(question, all, DEV_PERSONA)!;

  it.each([
    ["When did Avery start at Northwind Health?", ["since 2021"]],
    ["How long was Avery at Brightlane Labs?", ["from 2016 to 2018", "about 2 years"]],
    ["How many events per second does Signal Canvas handle?", ["20,000 events per second"]],
    ["Who said Avery taught them how to write APIs?", ["Sam Okafor"]],
    ["Where did Avery work in 2019?", ["Parcel & Pine"]],
    ["Who was Avery's first employer?", ["Brightlane Labs"]],
    ["Where did Avery work before Northwind Health?", ["Parcel & Pine"]],
    ["Which testing tools does Avery use?", ["Vitest", "Playwright"]],
    ["Does Avery know Go?", ["Yes", "Go"]],
    ["Where can I try Ask Avery live?", ["https://ask.avery-quinn.example.dev"]],
  ])("%s", (question, fragments) => {
    const text = answer(question);
    for (const fragment of fragments) expect(text).toContain(fragment);
  });

  it("declines by naming the missing thing and listing what the portfolio holds", () => {
    const text = answer("Does Avery know Vue?");
    expect(text).toMatch(
      /^No, not according to the portfolio: the portfolio doesn't mention Vue\./,
    );
    expect(text).toContain("React");
  });
});
