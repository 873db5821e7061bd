import type { PortfolioContent } from "./content.ts";
import { foldCharacters } from "./safety-normalise.ts";

/**
 * What the portfolio talks about, drawn from its content at ingestion: the
 * owner's names, the things that belong to the portfolio (projects,
 * employers, schools, the people who recommend the owner), the technologies
 * it lists, and every word it uses. The safety screen reads it to decide
 * whether a question is about the portfolio, so a project added in the CMS
 * is in scope as soon as it is ingested, with no change to code or rules.
 */
export interface PortfolioVocabulary {
  ownerNames: string[];
  /** Names of things that belong to the portfolio (multi-word names kept whole). */
  entities: string[];
  technologies: string[];
  /** Every distinct word of the portfolio's text, folded. */
  terms: string[];
}

export const EMPTY_VOCABULARY: PortfolioVocabulary = {
  ownerNames: [],
  entities: [],
  technologies: [],
  terms: [],
};

/** Folded word tokens of any script; Latin runs are split from other scripts. */
export function topicWords(text: string): string[] {
  // Plain ASCII (most questions) needs no Unicode folding.
  if (/^[\x20-\x7e]*$/.test(text))
    return text.toLowerCase().replace(/'s\b/g, " ").match(ASCII_WORD) ?? [];
  const folded = foldCharacters(text)
    .normalize("NFKD")
    .replace(/(\p{Script=Latin})\p{M}+/gu, "$1")
    .normalize("NFC")
    .replace(/'s\b/g, " ")
    .replace(/([a-z0-9])(?=[^\sa-z0-9\p{P}\p{S}])/gu, "$1 ")
    .replace(/([^\sa-z0-9\p{P}\p{S}])(?=[a-z0-9])/gu, "$1 ");
  return folded.match(WORD) ?? [];
}

const ASCII_WORD = /[a-z0-9]+(?:[.+#][a-z0-9]+)*[+#]*/g;
const WORD = /[\p{L}\p{N}\p{M}]+(?:[.+#][\p{L}\p{N}]+)*[+#]*/gu;

const clean = (value: string | null | undefined) => (value ?? "").replace(/\s+/g, " ").trim();

/** `Label: a, b, c` lines of a resume section. */
function labelledValues(text: string, labels: RegExp): string[] {
  const values: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const match = /^([^:]{2,40}):\s*(.+)$/.exec(line.trim());
    if (match && labels.test(match[1]!)) values.push(match[2]!.trim());
  }
  return values;
}

const ENTITY_LABELS = /^(?:company|employer|organi[sz]ation|client|school|university|project)$/i;
const SKILL_LABELS =
  /^(?:languages?|frameworks?|platforms?|tools?|skills?|technologies|databases?|cloud|ai and data|libraries|stack)$/i;
const SCHOOL_LINE = /\b(?:university|college|school|institute|academy|polytechnic)\b[^,\n]*/gi;

export function vocabularyFromContent(content: PortfolioContent): PortfolioVocabulary {
  const ownerNames = new Set<string>();
  const entities = new Set<string>();
  const technologies = new Set<string>();
  const texts: string[] = [];
  const addEntity = (value: string | null | undefined) => {
    const name = clean(value);
    if (name.length > 1) entities.add(name);
  };
  for (const profile of content.profiles) {
    if (clean(profile.name)) ownerNames.add(clean(profile.name));
    texts.push(profile.headline ?? "", profile.summary ?? "", profile.industry ?? "");
    texts.push(profile.location ?? "", ...(profile.websites ?? []));
  }
  for (const project of content.projects) {
    addEntity(project.title);
    addEntity(project.company);
    for (const tech of project.technologies ?? []) if (clean(tech)) technologies.add(clean(tech));
    texts.push(project.role ?? "", project.overview ?? "", project.vision ?? "");
    texts.push(...(project.contribution ?? []), project.liveUrl ?? "", project.githubUrl ?? "");
  }
  for (const testimonial of content.testimonials) {
    addEntity(testimonial.author);
    texts.push(testimonial.role ?? "", testimonial.quote ?? "");
  }
  for (const recommendation of content.recommendations) {
    if (recommendation.visible === false) continue;
    addEntity(recommendation.author);
    addEntity(recommendation.company);
    texts.push(recommendation.jobTitle ?? "", recommendation.text ?? "");
  }
  for (const resume of content.resumes) {
    const text = resume.text ?? "";
    texts.push(text);
    for (const value of labelledValues(text, ENTITY_LABELS)) addEntity(value);
    for (const value of labelledValues(text, SKILL_LABELS))
      for (const tech of value.split(/[,;]/)) if (clean(tech)) technologies.add(clean(tech));
    for (const match of text.matchAll(SCHOOL_LINE)) addEntity(match[0]);
  }
  const terms = new Set<string>();
  for (const text of [...texts, ...entities, ...technologies, ...ownerNames])
    for (const word of topicWords(text)) terms.add(word);
  const sorted = (values: Set<string>) => [...values].sort();
  return {
    ownerNames: sorted(ownerNames),
    entities: sorted(entities),
    technologies: sorted(technologies),
    terms: sorted(terms),
  };
}

/** Tolerant reader for a stored vocabulary (older or hand-edited rows read as empty parts). */
export function parseVocabulary(json: string | undefined): PortfolioVocabulary | null {
  if (!json) return null;
  try {
    const value = JSON.parse(json) as Partial<Record<keyof PortfolioVocabulary, unknown>>;
    const list = (field: unknown) =>
      Array.isArray(field) ? field.filter((item): item is string => typeof item === "string") : [];
    return {
      ownerNames: list(value.ownerNames),
      entities: list(value.entities),
      technologies: list(value.technologies),
      terms: list(value.terms),
    };
  } catch {
    return null;
  }
}
