import type { PreRouterReason } from "./pre-router.ts";
import type { Persona } from "./settings.ts";

/** Fixed replies: the pre-router's canned answers and the fallbacks. */

export function cannedAnswer(reason: PreRouterReason, persona: Persona, devMode: boolean): string {
  const { personName: name, contactEmail: email, assistantName: assistant } = persona;
  const first = name.split(/\s+/)[0] || name;
  switch (reason) {
    case "prompt_override_attempt":
      return `I can't share my internal instructions or set my rules aside. I'm happy to help with ${name}'s public portfolio: projects, experience, skills and testimonials.`;
    case "explicit_content":
      return `I can't help with explicit or sexual requests. Ask me about ${name}'s projects, experience or skills instead.`;
    case "personhood_confusion":
      return devMode
        ? `No. I'm not ${name}; I'm the development-mode version of ${assistant}, an AI assistant for a fictional portfolio. I don't speak for a real person, and every answer comes from fictional seeded data. The fictional contact address is ${email}.`
        : `No. I'm not ${name}; I'm ${assistant}, the AI assistant for ${first}'s public portfolio. To reach ${name} directly, write to ${email}.`;
    case "assistant_identity":
      return devMode
        ? `I'm the development-mode version of ${assistant}, an AI assistant that answers questions about ${name}'s fictional portfolio from seeded data. No real model tokens are spent here. Ask me about projects, experience, skills or testimonials.`
        : `I'm ${assistant}, the AI assistant on ${name}'s portfolio site. I can help with ${first}'s projects, experience, skills and public profile.`;
    case "compensation":
      return devMode
        ? `The fictional portfolio data has no salary or compensation information. I can tell you about ${name}'s experience, projects and skills; for anything else, the fictional contact is ${email}.`
        : `I don't have verified public information about ${name}'s compensation. I can tell you about ${first}'s experience, projects and skills; for anything else, contact ${email}.`;
    case "sensitive_personal_data":
      return `I only share ${name}'s professional, public information, never private personal details. The public contact is ${email}.`;
    case "unsupported_topic":
      return `I can only answer questions about ${name}'s projects, experience, skills, testimonials and public profile. Ask me something in that area!`;
  }
}

export function lowConfidenceAnswer(
  reason: "empty_results" | "low_similarity" | "low_term_coverage",
  persona: Persona,
): string {
  const offer = `I can help with ${persona.personName}'s projects, experience, skills, testimonials and public contact details, or you can write to ${persona.contactEmail}.`;
  if (reason === "empty_results")
    return `There is no verified portfolio information about that yet. ${offer}`;
  return `I don't have enough verified portfolio information to answer that confidently. ${offer}`;
}

export function pipelineFallbackAnswer(persona: Persona): string {
  return `I couldn't put together a fully verified answer just now, and I won't guess. Ask me about ${persona.personName}'s projects, experience or skills, or write to ${persona.contactEmail}.`;
}

/** Appended after a space when generation broke off mid-answer. */
export const PARTIAL_ANSWER_TAIL =
  "I can't verify anything beyond that, so I'll stop here rather than guess.";

export interface DeclineEvidence {
  source: string;
  content: string;
}

function listOf(values: string[]): string {
  if (values.length <= 1) return values.join("");
  return `${values.slice(0, -1).join(", ")} and ${values[values.length - 1]}`;
}

function labelledValues(chunks: DeclineEvidence[], labels: string[], sources?: string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const chunk of chunks) {
    if (sources && !sources.includes(chunk.source)) continue;
    for (const line of chunk.content.split("\n")) {
      const trimmed = line.trim();
      for (const label of labels) {
        if (!trimmed.startsWith(`${label}:`)) continue;
        for (const value of trimmed.slice(label.length + 1).split(",")) {
          const clean = value.trim();
          if (clean && !seen.has(clean.toLowerCase())) {
            seen.add(clean.toLowerCase());
            out.push(clean);
          }
        }
      }
    }
  }
  return out;
}

const TECH_CATEGORIES: [RegExp, string, string[]][] = [
  [/\blanguages?\b|\bwritten in\b/i, "languages", ["Languages"]],
  [/\bframeworks?\b|\blibrar(y|ies)\b/i, "frameworks", ["Frameworks"]],
  [
    /\bdatabases?\b|\bclouds?\b|\bplatforms?\b|\bhost(ing|ed)?\b|\bdeploy/i,
    "platforms",
    ["Platforms"],
  ],
  [/\btools?\b|\btesting\b|\bmonitoring\b/i, "tools", ["Tools"]],
];
const ALL_TECH_LABELS = [
  "Languages",
  "Frameworks",
  "Platforms",
  "AI and Data",
  "Tools",
  "Technologies",
];

/** What the portfolio does list in the area the question asked about, as one sentence. */
function relatedListing(question: string, chunks: DeclineEvidence[]): string {
  const q = question.toLowerCase();
  if (
    /\b(work(ed|ing|s)?|employ(ed|er|ers)?|job|compan(y|ies)|join(ed)?|hired?)\b/.test(q) &&
    !/\b(use[ds]?|using|with)\b/.test(q)
  ) {
    const companies = labelledValues(chunks, ["Company"], ["resume"]);
    if (companies.length > 0) return `The companies it lists are ${listOf(companies)}.`;
  }
  if (/\b(stud(y|ied)|degree|universit|college|school|graduat|master|phd|gpa|bachelor)/.test(q)) {
    const education = chunks
      .filter((chunk) => chunk.content.includes("Resume Section: Education"))
      .flatMap((chunk) => chunk.content.split("\n").slice(1, 2));
    if (education[0]) return `It lists ${education[0].trim().replace(/\.$/, "")}.`;
  }
  if (/\b(based|located|location|country|city|live|lives|from)\b/.test(q)) {
    const location = labelledValues(chunks, ["Location"]);
    if (location.length > 0) return `It gives the location as ${location.join(", ")}.`;
  }
  for (const [pattern, name, labels] of TECH_CATEGORIES) {
    if (!pattern.test(q)) continue;
    const values = labelledValues(chunks, labels);
    if (values.length > 0) return `The ${name} it lists are ${listOf(values.slice(0, 10))}.`;
  }
  if (
    /\b(use[ds]?|using|know|knows|knowledge|experience with|worked with|built with|tech|technolog|stack|skills?)\b/.test(
      q,
    )
  ) {
    const values = labelledValues(chunks, ALL_TECH_LABELS);
    if (values.length > 0)
      return `The technologies it lists include ${listOf(values.slice(0, 10))}.`;
  }
  return "";
}

const TYPE_GAPS: Partial<Record<string, string>> = {
  when: "a date",
  duration: "a date or duration",
  count: "that number",
  why: "a reason",
};

/**
 * The decline when the question asks about something the retrieved evidence
 * does not support: it names what is missing, says plainly "no" to a yes/no
 * question, and lists what the portfolio does hold in that area.
 */
export function notInPortfolioAnswer(
  question: string,
  decision: {
    reason: "entity_not_found" | "answer_type_not_found";
    type: string;
    missing: { surface: string }[];
    found: { surface: string }[];
  },
  chunks: DeclineEvidence[],
  persona: Persona,
): string {
  const missing = [...new Set(decision.missing.map((key) => key.surface))];
  const found = [...new Set(decision.found.map((key) => key.surface))].filter(
    (surface) => !missing.includes(surface),
  );
  const context = found.length > 0 ? ` in connection with ${listOf(found)}` : "";
  let statement: string;
  if (decision.type === "names")
    statement = `The portfolio doesn't name the ${listOf(missing)}${found.length > 0 ? ` for ${listOf(found)}` : ""}; it only gives how many.`;
  else if (decision.reason === "answer_type_not_found" || missing.length === 0)
    statement = `The portfolio doesn't give ${TYPE_GAPS[decision.type] ?? "that detail"}${found.length > 0 ? ` for ${listOf(found)}` : " for that"}.`;
  else statement = `The portfolio doesn't mention ${listOf(missing)}${context}.`;
  if (decision.type === "yes_no")
    statement = `No, not according to the portfolio: ${statement.charAt(0).toLowerCase()}${statement.slice(1)}`;
  const listing = decision.type === "names" ? "" : relatedListing(question, chunks);
  return [
    statement,
    listing,
    `I only answer from verified portfolio content, so I won't guess; for anything else, write to ${persona.contactEmail}.`,
  ]
    .filter(Boolean)
    .join(" ");
}
