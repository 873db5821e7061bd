import { describe, expect, it } from "vitest";
import { AVERY_QUINN_PORTFOLIO } from "../content/avery-quinn.ts";
import { chunkDocument, chunkText } from "./chunking.ts";
import { buildDocuments, type PortfolioDocument } from "./documents.ts";

const words = (n: number, word = "word") =>
  Array.from({ length: n }, (_, i) => `${word}${i}`).join(" ");

describe("chunking (500 words, 50 overlap by default)", () => {
  it("keeps paragraphs whole when they fit and respects the size", () => {
    const text = [words(300, "a"), words(300, "b"), words(300, "c")].join("\n\n");
    const chunks = chunkText(text, 500, 50);
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) expect(chunk.split(/\s+/).length).toBeLessThanOrEqual(500);
  });

  it("overlaps consecutive chunks by at least `overlap` words of whole paragraphs", () => {
    const paragraphs = Array.from({ length: 12 }, (_, i) => words(60, `p${i}x`));
    const chunks = chunkText(paragraphs.join("\n\n"), 500, 50);
    expect(chunks.length).toBe(2);
    const lastOfFirst = chunks[0]!.split("\n\n").at(-1)!;
    expect(chunks[1]!.startsWith(lastOfFirst)).toBe(true);
  });

  it("splits an oversized paragraph by sentence, then into word windows", () => {
    const chunks = chunkText(words(1200), 500, 50);
    expect(chunks.map((chunk) => chunk.split(" ").length)).toEqual([500, 500, 200]);
  });

  it("repeats the document prefix on every chunk when a document is split", () => {
    const prefix = "Project: Atlas\nEvidence Type: project";
    const doc: PortfolioDocument = {
      source: "project",
      sourceId: "atlas#overview",
      itemId: "atlas",
      title: "Atlas",
      prefix,
      text: `${prefix}\n\n${Array.from({ length: 10 }, (_, i) => `Overview: ${words(30, `s${i}`)}.`).join("\n\n")}`,
    };
    const chunks = chunkDocument(doc, 60, 5);
    expect(chunks.length).toBeGreaterThan(1);
    chunks.forEach((chunk, index) => {
      expect(chunk.content.startsWith(`${prefix}\n\n`)).toBe(true);
      expect(chunk.chunkIndex).toBe(index);
    });
  });

  it("a document that fits is one chunk, the whole text", () => {
    const docs = buildDocuments(AVERY_QUINN_PORTFOLIO);
    const chunks = docs.flatMap((doc) => chunkDocument(doc, 500, 50));
    expect(chunks).toHaveLength(docs.length);
    expect(chunks.every((chunk, i) => chunk.content === docs[i]!.text.trim())).toBe(true);
  });
});

describe("documents", () => {
  it("keeps each job's role, company, dates and description in one chunk", () => {
    const chunks = buildDocuments(AVERY_QUINN_PORTFOLIO).flatMap((doc) =>
      chunkDocument(doc, 500, 50),
    );
    const jobs = chunks.filter((chunk) =>
      chunk.sourceId.startsWith("resume#professional-experience-"),
    );
    expect(jobs.map((chunk) => chunk.title)).toEqual([
      "Resume: Staff Engineer at Northwind Health",
      "Resume: Senior Frontend Engineer at Parcel & Pine",
      "Resume: Software Engineer at Brightlane Labs",
    ]);
    const brightlane = jobs[2]!.content;
    expect(brightlane.startsWith("Resume Section: Professional Experience\n")).toBe(true);
    for (const fact of [
      "Role: Software Engineer",
      "Company: Brightlane Labs",
      "Dates: 2016 to 2018",
      "internal tools and REST APIs",
    ])
      expect(brightlane).toContain(fact);
    expect(brightlane).not.toContain("Northwind");
    // Small chunk sizes split a long job, and every piece keeps the section prefix.
    const small = chunkDocument(
      buildDocuments(AVERY_QUINN_PORTFOLIO).find(
        (doc) => doc.sourceId === "resume#professional-experience-1",
      )!,
      20,
      2,
    );
    expect(small.length).toBeGreaterThan(1);
    for (const chunk of small)
      expect(chunk.content.startsWith("Resume Section: Professional Experience")).toBe(true);
  });

  it("builds project, testimonial, resume-section, profile and recommendation documents", () => {
    const docs = buildDocuments(AVERY_QUINN_PORTFOLIO);
    const ids = docs.map((doc) => doc.sourceId);
    expect(ids).toContain("project-ask-avery#overview");
    expect(ids).toContain("project-ask-avery#contributions");
    expect(ids).toContain("project-ask-avery#links");
    expect(ids).not.toContain("project-signal-canvas#links");
    expect(ids).toEqual(
      expect.arrayContaining([
        "resume#professional-experience-1",
        "resume#professional-experience-2",
        "resume#professional-experience-3",
      ]),
    );
    expect(ids).toContain("testimonial-morgan-ellis");
    expect(ids).toContain("recommendation-jordan-blake");
    const overview = docs.find((doc) => doc.sourceId === "project-signal-canvas#overview")!;
    expect(overview.prefix.split("\n")[0]).toBe("Project: Signal Canvas");
    expect(overview.text).toContain(
      "Technologies: React, TypeScript, Python, Kafka, PostgreSQL, Dashboards",
    );
    expect(AVERY_QUINN_PORTFOLIO.projects.length).toBeGreaterThanOrEqual(3);
    expect(AVERY_QUINN_PORTFOLIO.testimonials).toHaveLength(2);
  });
});
