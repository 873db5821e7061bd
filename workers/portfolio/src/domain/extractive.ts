import type { ParsedContextChunk } from "./prompt.ts";
import type { Persona } from "./settings.ts";
import { contentTerms, expandTerms } from "./text.ts";

/**
 * A grounded extractive answerer: every fact in its answer is a line or
 * sentence of the retrieved chunks; only the connecting words are its own.
 * Used as the local generator and as the context fallback when a real
 * model fails before streaming anything.
 */

const META_PREFIXES = [
  "Evidence Type:",
  "Keywords:",
  "Useful for queries about:",
  "Resume Section:",
];

const TERMS = {
  contact: ["contact", "email", "reach", "hire", "connect", "touch"],
  project: ["project", "build", "portfolio", "app", "product", "shipped"],
  skill: ["skill", "stack", "tech", "technology", "framework", "language", "tool", "know"],
  feedback: [
    "testimonial",
    "feedback",
    "recommendation",
    "colleague",
    "manager",
    "say",
    "reference",
  ],
  experience: ["experience", "year", "work", "career", "role", "company", "job", "employer"],
  education: ["education", "degree", "study", "university", "college", "school"],
} as const;

type Intent = keyof typeof TERMS | "general";

function intentOf(terms: Set<string>): Intent {
  for (const intent of Object.keys(TERMS) as (keyof typeof TERMS)[])
    if (TERMS[intent].some((term) => terms.has(term))) return intent;
  return "general";
}

function uniqueCaseInsensitive(values: string[], limit: number): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const value of values) {
    const key = value.trim().toLowerCase();
    if (!key || seen.has(key)) continue;
    seen.add(key);
    out.push(value.trim());
    if (out.length >= limit) break;
  }
  return out;
}

function linesOf(chunks: ParsedContextChunk[]): string[] {
  return chunks.flatMap((chunk) => chunk.content.split("\n").map((line) => line.trim()));
}

function valuesAfter(chunks: ParsedContextChunk[], prefixes: string[]): string[] {
  const out: string[] = [];
  for (const line of linesOf(chunks))
    for (const prefix of prefixes)
      if (line.startsWith(prefix)) out.push(line.slice(prefix.length).trim());
  return out;
}

function listOf(values: string[]): string {
  if (values.length <= 1) return values.join("");
  return `${values.slice(0, -1).join(", ")} and ${values[values.length - 1]}`;
}

function sentence(text: string): string {
  const trimmed = text.trim().replace(/^[-"]\s*|"$/g, "");
  return /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}

/** Candidate evidence: non-meta lines and the sentences inside long lines. */
function evidenceUnits(chunks: ParsedContextChunk[]): string[] {
  const units: string[] = [];
  for (const line of linesOf(chunks)) {
    if (!line || META_PREFIXES.some((prefix) => line.startsWith(prefix))) continue;
    const body = line.replace(/^(Overview|Vision|Summary|Testimonial):\s*/, "");
    for (const piece of body.split(/(?<=[.!?])\s+(?=[A-Z"])/)) if (piece.trim()) units.push(piece);
  }
  return units;
}

function bestEvidence(chunks: ParsedContextChunk[], terms: Set<string>, limit: number): string[] {
  const scored = evidenceUnits(chunks)
    .map((unit, order) => {
      const unitTerms = new Set(contentTerms(unit));
      let hits = 0;
      for (const term of terms) if (unitTerms.has(term)) hits++;
      return { unit, order, score: hits / Math.sqrt(unitTerms.size + 1) };
    })
    .filter((entry) => entry.score > 0 && !/^[A-Z][A-Za-z ]{1,30}:\s*$/.test(entry.unit));
  scored.sort((a, b) => b.score - a.score || a.order - b.order);
  return uniqueCaseInsensitive(
    scored.map((entry) => entry.unit),
    limit,
  );
}

/** Chunks about one project when the question names it; otherwise all of them. */
function focusOnNamedProject(chunks: ParsedContextChunk[], question: string) {
  const lower = question.toLowerCase();
  const named = uniqueCaseInsensitive(valuesAfter(chunks, ["Project: "]), 20).filter((title) =>
    lower.includes(title.toLowerCase()),
  );
  if (named.length === 0) return { chunks, project: null };
  const project = named[0]!;
  return {
    chunks: chunks.filter((chunk) => chunk.content.includes(`Project: ${project}`)),
    project,
  };
}

export function extractiveAnswer(
  question: string,
  allChunks: ParsedContextChunk[],
  persona: Persona,
): string | null {
  const name = persona.personName.split(/\s+/)[0] || persona.personName;
  const ignored = new Set(contentTerms(persona.personName));
  const terms = new Set(contentTerms(question).filter((term) => !ignored.has(term)));
  const expanded = expandTerms(terms);
  const { chunks, project } = focusOnNamedProject(allChunks, question);
  if (chunks.length === 0) return null;

  if (project) {
    const overview = valuesAfter(chunks, ["Overview: "]);
    const role = valuesAfter(chunks, ["Role: "])[0];
    const company = valuesAfter(chunks, ["Company: "])[0];
    const technologies = valuesAfter(chunks, ["Technologies: "])[0];
    const contributions = linesOf(chunks)
      .filter((line) => line.startsWith("- "))
      .map((line) => line.slice(2));
    const parts: string[] = [];
    if (overview[0]) parts.push(sentence(overview[0]));
    if (role || company)
      parts.push(`${name}'s role: ${[role, company].filter(Boolean).join(" at ")}.`);
    if (technologies) parts.push(`Technologies: ${technologies}.`);
    if (contributions.length > 0)
      parts.push(
        `Highlights: ${uniqueCaseInsensitive(contributions, 3)
          .map((c) => c.replace(/\.$/, ""))
          .join("; ")}.`,
      );
    const links = [...valuesAfter(chunks, ["Live URL: "]), ...valuesAfter(chunks, ["GitHub: "])];
    if (links.length > 0) parts.push(`Links: ${links.join(", ")}.`);
    if (parts.length > 0) return parts.join(" ");
  }

  switch (intentOf(terms)) {
    case "contact": {
      const contact = bestEvidence(chunks, new Set(["contact", "email", "reach"]), 1);
      return `You can reach ${persona.personName} at ${persona.contactEmail}.${contact[0] && !contact[0].includes(persona.contactEmail) ? ` ${sentence(contact[0])}` : ""}`;
    }
    case "project": {
      const titles = uniqueCaseInsensitive(valuesAfter(chunks, ["Project: "]), 4);
      if (titles.length === 0) break;
      const technologies = uniqueCaseInsensitive(
        valuesAfter(chunks, ["Technologies: "]).flatMap((line) => line.split(",")),
        8,
      );
      let answer = `${name} has built projects like ${listOf(titles)}.`;
      if (technologies.length > 0)
        answer += ` Technologies used across them include ${listOf(technologies)}.`;
      return answer;
    }
    case "skill": {
      const skills = uniqueCaseInsensitive(
        valuesAfter(chunks, [
          "Languages: ",
          "Frameworks: ",
          "Platforms: ",
          "AI and Data: ",
          "Tools: ",
          "Technologies: ",
        ]).flatMap((line) => line.split(",")),
        12,
      );
      if (skills.length === 0) break;
      const asked = [...terms].filter((term) =>
        skills.some((skill) => contentTerms(skill).includes(term)),
      );
      const lead =
        asked.length > 0
          ? `Yes: the portfolio lists ${listOf(skills.filter((skill) => asked.some((term) => contentTerms(skill).includes(term))))} among ${name}'s skills.`
          : `${name}'s portfolio highlights skills including ${listOf(skills)}.`;
      return lead;
    }
    case "feedback": {
      const authors = uniqueCaseInsensitive(
        valuesAfter(chunks, ["From: ", "Recommendation from: "]),
        3,
      );
      const quotes = linesOf(chunks)
        .map((line) => line.replace(/^Testimonial:\s*/, ""))
        .filter((line) => /^".+"$/.test(line));
      if (authors.length === 0 && quotes.length === 0) break;
      let answer = `Colleagues describe ${name} positively`;
      answer += authors.length > 0 ? `, including ${listOf(authors)}.` : ".";
      if (quotes[0]) answer += ` For example: ${quotes[0]}`;
      return answer;
    }
    case "experience": {
      const years = /(\d+\+?)\s+years?\s+of\s+experience/i.exec(linesOf(chunks).join("\n"));
      // Employment history lives in the resume; project roles are a last resort.
      const employment = chunks.filter((chunk) => chunk.source === "resume");
      const roleChunks = valuesAfter(employment, ["Role: "]).length > 0 ? employment : chunks;
      const roles = valuesAfter(roleChunks, ["Role: "]);
      const companies = valuesAfter(roleChunks, ["Company: "]);
      const parts: string[] = [];
      if (years) parts.push(`${name} has ${years[1]} years of experience.`);
      const pairs = uniqueCaseInsensitive(
        roles.map((role, i) => (companies[i] ? `${role} at ${companies[i]}` : role)),
        3,
      );
      if (pairs.length > 0) parts.push(`Roles include ${listOf(pairs)}.`);
      const evidence = bestEvidence(chunks, expanded, 1);
      if (evidence[0] && parts.length < 2) parts.push(sentence(evidence[0]));
      if (parts.length > 0) return parts.join(" ");
      break;
    }
    case "education": {
      const evidence = bestEvidence(chunks, expanded, 2);
      if (evidence.length > 0) return `Education: ${evidence.map(sentence).join(" ")}`;
      break;
    }
    case "general":
      break;
  }
  const evidence = bestEvidence(chunks, expanded, 2);
  if (evidence.length > 0) return `From ${name}'s portfolio: ${evidence.map(sentence).join(" ")}`;
  const firstLines = evidenceUnits(chunks).slice(0, 2);
  return firstLines.length > 0
    ? `From ${name}'s portfolio: ${firstLines.map(sentence).join(" ")}`
    : null;
}
