import {
  checkAnswerability,
  type EvidenceTerms,
  evidenceTerms,
  type KeyTerm,
  META_LINE,
  personEvidence,
  type QuestionType,
  questionType,
  supports,
} from "./answerability.ts";
import { notInPortfolioAnswer } from "./answers.ts";
import type { ParsedContextChunk } from "./prompt.ts";
import type { Persona } from "./settings.ts";
import { contentTerms, expandTerms, TECHNOLOGY_CATEGORIES } from "./text.ts";

/**
 * A grounded extractive answerer: every fact in its answer is a field, line
 * or sentence of the retrieved chunks; only the connecting words are its
 * own. It answers the question's type (when, how long, how many, where, who
 * said, yes/no) from the portfolio item that supports all of the question's
 * key terms, and declines, naming what is missing, when no item does. Used
 * as the local generator and as the context fallback when a real model
 * fails before streaming anything.
 */

/** One portfolio item as the context shows it: its labelled fields and its text. */
interface EvidenceRecord {
  source: string;
  title: string;
  order: number;
  fields: Map<string, string>;
  /** Sentences, bullets and quotes (fields excluded), in order. */
  units: string[];
  text: string;
  evidence: EvidenceTerms;
}

const FIELD_LABELS = [
  "Project",
  "Role",
  "Company",
  "Dates",
  "Technologies",
  "Keywords",
  "Live URL",
  "GitHub",
  "Websites",
  "From",
  "Recommendation from",
  "Their role",
  "Name",
  "Headline",
  "Industry",
  "Location",
  "Languages",
  "Frameworks",
  "Platforms",
  "AI and Data",
  "Tools",
  "Contact",
] as const;
type FieldLabel = (typeof FIELD_LABELS)[number];

const TEXT_LABELS = /^(Overview|Vision|Summary|Testimonial):\s*/;
const SKILL_LABELS: FieldLabel[] = ["Languages", "Frameworks", "Platforms", "AI and Data", "Tools"];

function splitSentences(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+(?=[A-Z"])/)
    .map((piece) => piece.trim())
    .filter(Boolean);
}

function buildRecords(chunks: ParsedContextChunk[]): EvidenceRecord[] {
  const byItem = new Map<
    string,
    { source: string; title: string; order: number; lines: string[] }
  >();
  chunks.forEach((chunk, order) => {
    const key = `${chunk.source}|${chunk.title}`;
    const item = byItem.get(key) ?? { source: chunk.source, title: chunk.title, order, lines: [] };
    item.lines.push(...chunk.content.split("\n").map((line) => line.trim()));
    byItem.set(key, item);
  });
  return [...byItem.values()].map((item) => {
    const fields = new Map<string, string>();
    const units: string[] = [];
    for (const line of item.lines) {
      if (!line || META_LINE.test(line) || line === "Key Contributions:") continue;
      const label = FIELD_LABELS.find((candidate) => line.startsWith(`${candidate}:`));
      if (label) {
        if (!fields.has(label)) fields.set(label, line.slice(label.length + 1).trim());
        continue;
      }
      const textLabel = TEXT_LABELS.exec(line);
      if (textLabel) fields.set(textLabel[1]!, line.slice(textLabel[0].length).trim());
      const body = line
        .replace(TEXT_LABELS, "")
        .replace(/^- /, "")
        .replace(/^"(.*)"$/, "$1");
      units.push(...splitSentences(body));
    }
    const text = [item.title, ...item.lines.filter((line) => !META_LINE.test(line))].join("\n");
    return {
      source: item.source,
      title: item.title,
      order: item.order,
      fields,
      units: uniqueCaseInsensitive(units, 100),
      text,
      evidence: evidenceTerms(text),
    };
  });
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

function listOf(values: string[]): string {
  if (values.length <= 1) return values.join("");
  return `${values.slice(0, -1).join(", ")} and ${values[values.length - 1]}`;
}

function sentence(text: string): string {
  const trimmed = text.trim().replace(/^[-"]\s*|"$/g, "");
  return /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}

const isQuote = (record: EvidenceRecord) =>
  record.fields.has("From") || record.fields.has("Recommendation from");
const isJob = (record: EvidenceRecord) =>
  record.fields.has("Role") && record.fields.has("Company") && record.fields.has("Dates");
const isProject = (record: EvidenceRecord) => record.fields.has("Project");
const isEducation = (record: EvidenceRecord) => /education/i.test(record.title);
const isSkills = (record: EvidenceRecord) => SKILL_LABELS.some((label) => record.fields.has(label));

const NUMBER =
  /\d|\b(one|two|three|four|five|six|seven|eight|nine|ten|dozens?|hundreds?|thousands?|millions?|few)\b/i;
const YEAR = /\b(19|20)\d\d\b/;

interface Question {
  text: string;
  lower: string;
  type: QuestionType;
  keys: KeyTerm[];
  /** Every content term (frame words included), with synonyms. */
  terms: Set<string>;
}

function overlap(record: EvidenceRecord, terms: Set<string>): number {
  let hits = 0;
  for (const term of terms) if (supports(record.evidence, term)) hits++;
  return hits;
}

function scoreUnit(unit: string, terms: Set<string>): number {
  const evidence = evidenceTerms(unit);
  let hits = 0;
  for (const term of terms) if (supports(evidence, term)) hits++;
  return hits / Math.sqrt(evidence.terms.size + 1);
}

function bestUnits(record: EvidenceRecord, question: Question, accept: (unit: string) => boolean) {
  // Terms naming the record itself ("Signal Canvas") do not tell its sentences apart.
  const own = new Set(
    contentTerms(
      [
        record.title,
        ...(["Project", "Company", "From", "Recommendation from"] as const).map(
          (label) => record.fields.get(label) ?? "",
        ),
      ].join(" "),
    ),
  );
  const keyTerms = new Set(question.keys.map((key) => key.term).filter((term) => !own.has(term)));
  const terms = new Set([...question.terms].filter((term) => !own.has(term)));
  return record.units
    .filter(accept)
    .map((unit, order) => ({
      unit,
      order,
      score: scoreUnit(unit, terms) + 2 * scoreUnit(unit, keyTerms),
    }))
    .sort((a, b) => b.score - a.score || a.order - b.order)
    .map((entry) => entry.unit);
}

/** The record a question is about: it must support every key term; then the best match. */
function focusRecord(
  records: EvidenceRecord[],
  question: Question,
  ignored: ReadonlySet<string>,
): EvidenceRecord | null {
  const candidates = records.filter((record) => {
    const evidence = isQuote(record)
      ? evidenceTerms(personEvidence(record.text, question.text, ignored))
      : record.evidence;
    return question.keys.every((key) => supports(evidence, key.term));
  });
  if (candidates.length === 0) return null;
  const current = /\b(now|current|currently|still|today|present)\b/.test(question.lower);
  const scored = candidates.map((record) => {
    let score = overlap(record, question.terms) - record.order * 0.05;
    if (question.type === "when" || question.type === "duration")
      score += record.evidence.hasYear ? 2 : -2;
    if (question.type === "count") score += record.evidence.hasNumber ? 1 : -2;
    if (question.type === "who_said" || question.type === "who") score += isQuote(record) ? 2 : 0;
    // Someone else's words about the person answer only questions about what people say,
    // or questions that name the author; facts about jobs and projects come from those items.
    if (isQuote(record) && !asksAboutQuotes(question, record)) score -= 4;
    // "How does Avery describe themselves?": their own summary, not a colleague's words.
    if (/\b(themselves|themself|himself|herself|own words)\b/.test(question.lower))
      score += record.fields.has("Summary") ? 6 : isQuote(record) ? -6 : 0;
    // "Does Avery know Docker?", "Which databases…": the skills list answers for the whole career.
    if (isSkills(record) && TECH_QUESTION.test(question.lower)) score += 2;
    // "What did Avery do at Northwind?": the job there, before a project there.
    if (isJob(record) && /\b(do|did|work|worked|working)\b.*\bat\b/.test(question.lower))
      score += 1.5;
    // The person's own links, unless the question names a project (then only it is a candidate).
    if (
      record.fields.has("Websites") &&
      /\b(github|website|site|links?|online|homepage)\b/.test(question.lower)
    )
      score += 1.5;
    // "Who is Avery?": the introduction, not a colleague.
    if (question.type === "who" && question.keys.length === 0)
      score += /introduction/i.test(record.title) || record.fields.has("Headline") ? 4 : -4;
    if (current && isJob(record))
      score += /present/i.test(record.fields.get("Dates") ?? "") ? 3 : -1;
    if (/\b(stud(y|ied)|graduat|degree|universit|thesis|education)/.test(question.lower))
      score += isEducation(record) ? 3 : 0;
    return { record, score };
  });
  scored.sort((a, b) => b.score - a.score || a.record.order - b.record.order);
  return scored[0]!.record;
}

const TECH_QUESTION =
  /\b(know|knows|use|used|uses|using|experience with|worked with|familiar|skills?|stack|technolog\w*|tools?|languages?|frameworks?|platforms?|databases?|clouds?|librar\w*)\b/;

function asksAboutQuotes(question: Question, record: EvidenceRecord): boolean {
  if (question.type === "who_said" || question.type === "who") return true;
  if (
    /\b(say|said|says|think|thinks|describe[sd]?|feedback|quotes?|testimonials?|recommend\w*|wrote|colleagues?|managers?|references?|praise[sd]?)\b/.test(
      question.lower,
    )
  )
    return true;
  const author = evidenceTerms(
    record.fields.get("From") ?? record.fields.get("Recommendation from") ?? "",
  );
  return question.keys.some((key) => supports(author, key.term));
}

function jobDates(record: EvidenceRecord): { from: string; to: string } | null {
  const match = /((?:19|20)\d\d)\s*(?:to|-|–)\s*((?:19|20)\d\d|present)/i.exec(
    record.fields.get("Dates") ?? "",
  );
  return match ? { from: match[1]!, to: match[2]! } : null;
}

function jobSentence(record: EvidenceRecord, name: string, withDuration: boolean): string {
  const role = record.fields.get("Role");
  const company = record.fields.get("Company");
  const dates = jobDates(record);
  if (!dates) return `${name} was ${role} at ${company} (${record.fields.get("Dates")}).`;
  if (/present/i.test(dates.to))
    return `${name} has been ${role} at ${company} since ${dates.from} (${dates.from} to present).`;
  const years = Number(dates.to) - Number(dates.from);
  const duration =
    withDuration && years > 0 ? `, about ${years} year${years === 1 ? "" : "s"}` : "";
  return `${name} was ${role} at ${company} from ${dates.from} to ${dates.to}${duration}.`;
}

function quoteOf(record: EvidenceRecord): string {
  return record.fields.get("Testimonial")?.replace(/^"|"$/g, "") ?? record.units.join(" ");
}

function quoteAuthor(record: EvidenceRecord): string {
  const author = record.fields.get("From") ?? record.fields.get("Recommendation from") ?? "";
  const role = record.fields.get("Their role");
  const company = record.fields.get("Company");
  const detail = record.fields.get("Role") ?? [role, company].filter(Boolean).join(", ");
  return detail ? `${author} (${detail})` : author;
}

function projectSummary(record: EvidenceRecord, name: string): string {
  const parts: string[] = [];
  const overview = record.fields.get("Overview");
  if (overview) parts.push(sentence(overview));
  const role = record.fields.get("Role");
  const company = record.fields.get("Company");
  if (role || company)
    parts.push(`${name}'s role: ${[role, company].filter(Boolean).join(" at ")}.`);
  const technologies = record.fields.get("Technologies");
  if (technologies) parts.push(`Technologies: ${technologies}.`);
  return parts.join(" ");
}

/** Field labels a question can ask for by name. */
const FIELD_QUESTIONS: [RegExp, string[]][] = [
  [/\b(demo|url|try it|try)\b|\blive\b(?!\s+in\b)/, ["Live URL"]],
  [/\b(github|source code|repo|repository|code)\b/, ["GitHub", "Websites"]],
  [/\b(website|site|homepage|links?|online)\b/, ["Websites", "Live URL"]],
  [/\bheadline\b/, ["Headline"]],
  [/\b(full )?name\b/, ["Name"]],
  [/\bindustry\b/, ["Industry"]],
  [/\b(vision|goal|aim|purpose|problems?|solves?|why)\b/, ["Vision"]],
];

const SKILL_QUESTIONS: [RegExp, FieldLabel[]][] = [
  [/\blanguages?\b/, ["Languages"]],
  [/\bframeworks?\b|\blibrar(y|ies)\b/, ["Frameworks"]],
  [/\bclouds?\b|\bplatforms?\b|\bdatabases?\b|\bhosting\b/, ["Platforms"]],
  [/\bai\b|\bdata\b|\bmachine learning\b/, ["AI and Data"]],
  [/\btools?\b|\btesting\b|\bmonitoring\b/, ["Tools"]],
];

function answerFrom(
  record: EvidenceRecord,
  records: EvidenceRecord[],
  question: Question,
  persona: Persona,
): string | null {
  const name = persona.personName.split(/\s+/)[0] || persona.personName;
  const q = question.lower;
  const type = question.type;

  if (type === "who" && !isQuote(record) && question.keys.length === 0) {
    const headline = record.fields.get("Headline");
    const intro = record.units
      .filter((unit) => unit !== persona.personName)
      .slice(0, 2)
      .map(sentence)
      .join(" ");
    return `${persona.personName}: ${headline ? sentence(headline) : intro}`;
  }

  if (
    type === "who_said" ||
    (type === "who" && isQuote(record)) ||
    (isQuote(record) && /\b(say|said|think|describe|feedback|quote)\b/.test(q))
  ) {
    if (!isQuote(record)) return null;
    if (type === "who") return `${quoteAuthor(record)} wrote about ${name}: "${quoteOf(record)}"`;
    return `${quoteAuthor(record)} said: "${quoteOf(record)}"`;
  }

  if (type === "when" || type === "duration") {
    if (isJob(record)) return jobSentence(record, name, type === "duration");
    const dated = bestUnits(record, question, (unit) => YEAR.test(unit));
    if (dated[0]) return `From ${name}'s portfolio: ${sentence(dated[0])}`;
    return null;
  }

  if (type === "count") {
    const numbered = bestUnits(record, question, (unit) =>
      NUMBER.test(unit.replace(/https?:\/\/\S+/g, "")),
    );
    if (!numbered[0]) return null;
    if (isQuote(record)) return `${quoteAuthor(record)} wrote: "${sentence(numbered[0])}"`;
    const where = isJob(record)
      ? `At ${record.fields.get("Company")}`
      : isProject(record)
        ? `On ${record.fields.get("Project")}`
        : `From ${name}'s portfolio`;
    return `${where}: ${sentence(numbered[0])}`;
  }

  for (const [pattern, labels] of FIELD_QUESTIONS) {
    if (!pattern.test(q)) continue;
    const label = labels.find((candidate) => record.fields.has(candidate));
    if (label) {
      const subject = isProject(record) ? `${record.fields.get("Project")}` : `${name}'s profile`;
      return `${subject} — ${label}: ${record.fields.get(label)}.`;
    }
  }

  if (isJob(record)) {
    const description = record.units[0] ? ` ${sentence(record.units.join(" "))}` : "";
    if (type === "yes_no") {
      const current = /present/i.test(record.fields.get("Dates") ?? "");
      const asksCurrent = /\b(still|now|currently|today)\b/.test(q);
      const lead = asksCurrent && !current ? "No" : "Yes";
      return `${lead}: ${jobSentence(record, name, false)}${description}`;
    }
    if (/\b(role|title|position|job)\b/.test(q) && !/\bdo\b|\bdid\b/.test(q))
      return jobSentence(record, name, false);
    return `${jobSentence(record, name, false)}${description}`;
  }

  if (isQuote(record)) {
    const author = record.fields.get("From") ?? record.fields.get("Recommendation from") ?? "";
    const role = record.fields.get("Their role");
    const company = record.fields.get("Company");
    // A testimonial's Role line already names the company ("Engineering Manager, Northwind Health").
    const position = role
      ? [role, company].filter(Boolean).join(" at ")
      : record.fields.get("Role");
    if (
      position &&
      (type === "where" ||
        /\b(work|works|company|employer|do|does|role|job|title|position)\b/.test(q)) &&
      !/\b(say|said|says|think|wrote|describe)\b/.test(q)
    )
      return `${author} is ${position}.`;
    return `${quoteAuthor(record)} wrote about ${name}: "${quoteOf(record)}"`;
  }

  if (isSkills(record)) {
    const asked = SKILL_QUESTIONS.filter(([pattern]) => pattern.test(q)).flatMap(
      ([, labels]) => labels,
    );
    const keyTerms = question.keys
      .map((key) => key.term)
      .filter((term) => !TECHNOLOGY_CATEGORIES[term]);
    // A named technology: the line that lists it.
    if (keyTerms.length > 0) {
      const named = question.keys
        .filter((key) => !TECHNOLOGY_CATEGORIES[key.term])
        .map((key) => key.surface);
      const line = SKILL_LABELS.find((label) => {
        const value = record.fields.get(label);
        return value && keyTerms.every((term) => supports(evidenceTerms(value), term));
      });
      if (line) {
        const lead = type === "yes_no" ? "Yes: the" : "The";
        return `${lead} portfolio lists ${listOf(named)} among ${name}'s skills (${line}: ${record.fields.get(line)}).`;
      }
    }
    // "testing tools", "databases": the listed values of that kind, from whichever line holds them.
    const categories = contentTerms(question.text).filter((term) => TECHNOLOGY_CATEGORIES[term]);
    if (categories.length > 0) {
      const values = SKILL_LABELS.flatMap((label) =>
        (record.fields.get(label) ?? "").split(",").map((value) => value.trim()),
      ).filter(
        (value) => value && categories.some((category) => supports(evidenceTerms(value), category)),
      );
      if (values.length > 0)
        return `The portfolio lists ${listOf(uniqueCaseInsensitive(values, 12))} among ${name}'s skills.`;
    }
    const labels = asked.length > 0 ? asked : SKILL_LABELS;
    const lines = labels
      .filter((label) => record.fields.has(label))
      .map((label) => `${label}: ${record.fields.get(label)}`);
    if (lines.length > 0) return `${name}'s skills — ${lines.join("; ")}.`;
  }

  if (isProject(record)) {
    if (
      /\b(technolog\w*|stack|tech|frameworks?|languages?|tools?|databases?|platforms?|clouds?|librar\w*|built with|written in)\b/.test(
        q,
      )
    ) {
      const technologies = record.fields.get("Technologies");
      if (technologies)
        return `${record.fields.get("Project")} uses ${technologies}.${type === "yes_no" ? "" : ` ${name}'s role: ${record.fields.get("Role") ?? "not stated"}.`}`;
    }
    if (/\b(role|title|position)\b/.test(q) && record.fields.get("Role"))
      return `${name}'s role on ${record.fields.get("Project")}: ${record.fields.get("Role")}${record.fields.get("Company") ? ` (${record.fields.get("Company")})` : ""}.`;
    const keyTerms = new Set(question.keys.map((key) => key.term));
    const specific = bestUnits(
      record,
      question,
      (unit) => scoreUnit(unit, keyTerms) > 0 || keyTerms.size === 0,
    );
    const summary = projectSummary(record, name);
    const extra = specific[0] && !summary.includes(specific[0]) ? ` ${sentence(specific[0])}` : "";
    // A links-only chunk has no overview: fall through to the general answer.
    if (summary || extra)
      return type === "yes_no" && extra ? `Yes:${extra} ${summary}` : `${summary}${extra}`.trim();
  }

  if (type === "where" || /\b(based|located|location|country|city)\b/.test(q)) {
    const location = records
      .find((candidate) => candidate.fields.has("Location"))
      ?.fields.get("Location");
    if (isEducation(record) && record.units[0])
      return `${name} studied for: ${sentence(record.units[0])}`;
    if (location && !isEducation(record)) return `${name} is based in ${location}.`;
  }

  const units = bestUnits(record, question, () => true);
  if (units.length === 0) return null;
  const lead =
    type === "yes_no"
      ? "Yes: "
      : isEducation(record)
        ? "Education: "
        : `From ${name}'s portfolio: `;
  return `${lead}${units.slice(0, 2).map(sentence).join(" ")}`;
}

/** Order questions about jobs: first, latest, before or after another employer. */
function timelineAnswer(
  records: EvidenceRecord[],
  question: Question,
  persona: Persona,
): string | null {
  const q = question.lower;
  if (!/\b(work|worked|job|jobs|employer|company|role|position)\b/.test(q)) return null;
  const order = /\b(first|earliest)\b/.test(q)
    ? "first"
    : /\b(before|prior to|previous|previously)\b/.test(q)
      ? "before"
      : /\bafter\b/.test(q)
        ? "after"
        : null;
  if (!order) return null;
  const jobs = records
    .filter(isJob)
    .map((record) => ({ record, dates: jobDates(record) }))
    .filter(
      (job): job is { record: EvidenceRecord; dates: { from: string; to: string } } =>
        job.dates !== null,
    )
    .sort((a, b) => Number(a.dates.from) - Number(b.dates.from));
  if (jobs.length < 2) return null;
  const name = persona.personName.split(/\s+/)[0] || persona.personName;
  if (order === "first")
    return `${name}'s earliest listed job: ${jobSentence(jobs[0]!.record, name, false)}`;
  const anchor = jobs.find(
    (job) =>
      question.keys.length > 0 &&
      question.keys.every((key) =>
        supports(evidenceTerms(job.record.fields.get("Company") ?? ""), key.term),
      ),
  );
  if (!anchor) return null;
  const index = jobs.indexOf(anchor);
  const other = order === "before" ? jobs[index - 1] : jobs[index + 1];
  if (!other) return null;
  return `${order === "before" ? "Before" : "After"} ${anchor.record.fields.get("Company")}, ${jobSentence(other.record, name, false).replace(/^./, (c) => c.toLowerCase())}`;
}

/** Lists across items: "What projects…", "Which companies…". */
function listAnswer(
  records: EvidenceRecord[],
  question: Question,
  persona: Persona,
): string | null {
  const name = persona.personName.split(/\s+/)[0] || persona.personName;
  const q = question.lower;
  if (question.keys.length > 0) return null;
  if (/\b(companies|employers|where has .* worked|jobs|roles)\b/.test(q)) {
    const jobs = records.filter(isJob);
    const listed = listOf(
      jobs.map(
        (job) =>
          `${job.fields.get("Company")} (${job.fields.get("Role")}, ${job.fields.get("Dates")})`,
      ),
    );
    if (jobs.length > 1)
      return question.type === "count"
        ? `The portfolio lists ${jobs.length} employers: ${listed}.`
        : `${name} has worked at ${listed}.`;
  }
  if (/\bprojects?\b|\bbuilt\b|\bbuild\b/.test(q) && question.type !== "when") {
    const projects = records.filter(isProject);
    if (projects.length > 0) {
      const titles = uniqueCaseInsensitive(
        projects.map((p) => p.fields.get("Project")!),
        4,
      );
      const technologies = uniqueCaseInsensitive(
        projects.flatMap((p) => (p.fields.get("Technologies") ?? "").split(",")),
        8,
      );
      let answer =
        question.type === "count"
          ? `The portfolio lists ${titles.length} projects: ${listOf(titles)}.`
          : `${name} has built projects like ${listOf(titles)}.`;
      if (technologies.length > 0)
        answer += ` Technologies used across them include ${listOf(technologies)}.`;
      return answer;
    }
  }
  if (
    /\b(testimonials?|feedback|recommendations?|colleagues?|references?|people say|others say)\b/.test(
      q,
    )
  ) {
    const quotes = records.filter(isQuote);
    if (quotes.length > 0) {
      const authors = uniqueCaseInsensitive(
        quotes.map((r) => r.fields.get("From") ?? r.fields.get("Recommendation from") ?? ""),
        3,
      );
      return `Colleagues describe ${name} positively, including ${listOf(authors)}. For example: "${quoteOf(quotes[0]!)}"`;
    }
  }
  return null;
}

export function extractiveAnswer(
  question: string,
  chunks: ParsedContextChunk[],
  persona: Persona,
): string | null {
  if (chunks.length === 0) return null;
  const ignored = new Set(contentTerms(persona.personName));
  if (/\b(contact|e-?mail|reach|get in touch|hire)\b/i.test(question))
    return `You can reach ${persona.personName} at ${persona.contactEmail}.`;
  const records = buildRecords(chunks);
  const type = questionType(question);
  const decision = checkAnswerability(
    question,
    records.map((record) => ({ itemId: `${record.source}|${record.title}`, content: record.text })),
    ignored,
  );
  if (!decision.answerable) return notInPortfolioAnswer(question, decision, chunks, persona);
  const parsed: Question = {
    text: question,
    lower: question.toLowerCase(),
    type,
    keys: decision.keyTerms,
    terms: expandTerms(contentTerms(question).filter((term) => !ignored.has(term))),
  };
  const list = timelineAnswer(records, parsed, persona) ?? listAnswer(records, parsed, persona);
  if (list) return list;
  const focus = focusRecord(records, parsed, ignored);
  if (!focus)
    return notInPortfolioAnswer(
      question,
      { reason: "entity_not_found", type, missing: decision.keyTerms, found: [] },
      chunks,
      persona,
    );
  const answer = answerFrom(focus, records, parsed, persona)?.trim() || null;
  // Every key term of a yes/no question is supported by this item: the answer is yes.
  if (answer && type === "yes_no" && !/^(Yes|No)\b/.test(answer)) return `Yes: ${answer}`;
  return (
    answer ??
    notInPortfolioAnswer(
      question,
      { reason: "answer_type_not_found", type, missing: [], found: decision.keyTerms },
      chunks,
      persona,
    )
  );
}
